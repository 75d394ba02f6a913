"""Tree designs (issue 25, item 1) and the evidence widening (item 2).

The full-path design is the default (:class:`~hyperplan.search.mcts.TreeDesign`); Algorithm 1
as written and the earlier commit-widen default stay selectable by name, from the library and
from ``search run --design``.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.search.baselines import uct
from hyperplan.search.mcts import (
    BranchOn,
    HyperMCTS,
    MCTSConfig,
    TreeDesign,
    design_config,
)
from hyperplan.search.policies import HeuristicPolicy, RandomPolicy
from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph
from hyperplan.search.tree import Node
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv
from search_reference import TWO_GOALS_ABOUT, TWO_GOALS_AND_A_BUDGET, verdict_of


def test_the_default_is_the_full_path_design() -> None:
    config = MCTSConfig()
    assert config == design_config(TreeDesign.FULL_PATH) == design_config("full-path")
    assert config.expand_rollout and config.branch_on is BranchOn.ALL
    assert config.widen == 0.0 and not config.rollout_guidance and config.evidence_widening


def test_algorithm_1_as_written_and_the_earlier_default_stay_selectable() -> None:
    paper = design_config("paper")
    assert not paper.expand_rollout and paper.branch_on is BranchOn.ALL
    assert paper.widen == 0.0 and not paper.rollout_guidance and not paper.evidence_widening
    earlier = design_config(TreeDesign.COMMIT_WIDEN, budget=7)
    assert earlier.branch_on is BranchOn.COMMIT and earlier.widen == 0.25
    assert earlier.rollout_guidance and earlier.info_chain and not earlier.expand_rollout
    assert earlier.budget == 7 and design_config("paper", widen=0.5).widen == 0.5


def test_an_unknown_design_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="full-path, paper, commit-widen"):
        design_config("wide")


def test_verified_means_every_observation_met_the_decisions_own_objectives() -> None:
    objectives, about, local = TWO_GOALS_AND_A_BUDGET, TWO_GOALS_ABOUT, {"g1", "g2"}
    hg = TrajectoryHypergraph()
    hg.observe(["a", "b"], verdict_of({"g1": 1.0, "g2": 0.0, "budget": 0.0}, about), objectives)
    assert hg.verified("a", local)  # g1 met; the failed budget is a global constraint
    assert not hg.verified("b", local)  # g2 failed
    assert not hg.verified("c", local)  # never observed
    assert not hg.verified("a", {"g2"})  # no observation under these labels
    hg.observe(["a", "c"], verdict_of({"g1": 0.5, "g2": 1.0, "budget": 1.0},
                                      {**about, "g2": frozenset({"c"})}), objectives)
    assert not hg.verified("a", local)  # one partial score is enough to lose it
    assert hg.verified("c", local)


def _evidence_children(search: HyperMCTS) -> list[tuple[Node, Hashable]]:
    """The children the evidence widening added, read from the tree: with widening off (the
    full-path design), a node has more than its expansion's children only through it. (Read
    after the run rather than hooked: the compiled build refuses interpreted subclasses.)"""
    assert search.tree is not None
    return [(node, node.edges[-1].identity) for node in search.tree.nodes() if node.widened]


@pytest.mark.parametrize("seed", [1, 4])
def test_evidence_widening_adds_one_verified_decision_beside_the_policy_children(
    seed: int,
) -> None:
    # one wide, as first built (three wide: tests/test_search_open_parts.py)
    search = HyperMCTS(ToyShopEnv(seed, 4, 6), RandomPolicy(),
                       MCTSConfig(budget=40, early_stop=False, evidence_width=1), seed)
    search.run()
    added = _evidence_children(search)
    assert added  # the verified products of earlier rollouts reached other prefixes
    assert search.tree is not None and search.tree.root.widened == 0  # before any rollout
    hypergraph = search.hypergraph
    assert hypergraph is not None
    for node, identity in added:
        assert node.widened == 1 and len(node.edges) <= search.config.branching + 1
        assert node.edges[-1].recorded and hypergraph.known(identity)
        keys = [e.action.key for e in node.edges]
        assert len(set(keys)) == len(keys)


def test_no_evidence_widening_at_lambda_zero_or_when_switched_off() -> None:
    for config in (MCTSConfig(budget=30, lam=0.0, early_stop=False),
                   MCTSConfig(budget=30, evidence_widening=False, early_stop=False)):
        search = HyperMCTS(ToyShopEnv(1, 4, 6), RandomPolicy(), config, 1)
        search.run()
        assert not _evidence_children(search)


@pytest.mark.parametrize("seed", [2, 9])
def test_lambda_zero_in_the_full_path_design_is_uct_decision_for_decision(seed: int) -> None:
    config = MCTSConfig(budget=40, lam=0.0, early_stop=False, trace=True)
    env = ToyShopEnv(seed, 3, 5, info=True)
    with_graph = HyperMCTS(env, HeuristicPolicy(), config, seed).run()
    plain = uct(env, HeuristicPolicy(), config, seed)
    assert with_graph.trace == plain.trace and with_graph.rewards == plain.rewards


def test_search_run_takes_a_design_and_reports_its_settings() -> None:
    args = ["search", "run", "--suite", "toy", "--tasks", "2", "--rollouts", "5", "--seed", "1",
            "--methods", "hypermcts,uct", "--json"]
    default = json.loads(CliRunner().invoke(app, args).stdout)
    assert default["design"] == "full-path" and default["expand_rollout"] is True
    assert default["evidence_widening"] is True and default["widen"] == 0.0
    paper = json.loads(CliRunner().invoke(app, [*args, "--design", "paper"]).stdout)
    assert paper["design"] == "paper" and paper["expand_rollout"] is False
    assert paper["evidence_widening"] is False
    tuned = json.loads(CliRunner().invoke(app, [*args, "--design", "paper", "--widen", "0.5"]
                                          ).stdout)
    assert tuned["widen"] == 0.5  # an option given overrides the design's setting
    bad = CliRunner().invoke(app, [*args, "--design", "wide"])
    assert bad.exit_code != 0 and "unknown --design 'wide'" in bad.output


def test_every_third_iteration_composes_the_verified_decisions() -> None:
    """Each composed rollout (the 3rd, 6th, ... iteration, once a decision is verified) takes,
    at every history of the tree it passes, the first child verified on every objective it
    was scored on, when there is one: checked by walking each composed trajectory down the tree
    and the hypergraph as they stood before it (a second search with the budget cut there)."""
    env = ToyShopEnv(3, 4, 6, slack=2.0)  # a loose budget: products verified on every objective
    config = MCTSConfig(budget=30, early_stop=False, trace=True)
    full = HyperMCTS(env, RandomPolicy(), config, 3).run()
    checked = 0
    for k in range(2, 30, 3):
        before = HyperMCTS(env, RandomPolicy(), replace(config, budget=k), 3)
        assert before.run().trace == full.trace[:k]  # the same search up to there
        hypergraph, tree = before.hypergraph, before.tree
        assert hypergraph is not None and tree is not None
        if not before.ledger.verified:
            continue
        node = tree.root
        for key in full.trace[k]:
            if not node.expanded:
                break  # new histories: their children are made during the rollout
            first = next((e for e in node.edges if e.recorded and hypergraph.verified(
                e.identity, before.ledger.objective_ids)), None)
            if first is not None:
                assert key == first.action.key
                checked += 1
            node = next(e.child for e in node.edges if e.action.key == key)
    assert checked >= 3


def test_composition_is_off_at_lambda_zero_and_when_set_to_zero() -> None:
    env = ToyShopEnv(3, 4, 6, slack=2.0)
    base = MCTSConfig(budget=30, early_stop=False, trace=True, evidence_widening=False)
    off = HyperMCTS(env, RandomPolicy(), replace(base, compose_every=0), 3).run()
    on = HyperMCTS(env, RandomPolicy(), base, 3).run()
    assert on.trace != off.trace  # it changes the search ...
    lam0 = replace(base, lam=0.0)
    assert HyperMCTS(env, RandomPolicy(), lam0, 3).run().trace == uct(
        env, RandomPolicy(), lam0, 3).trace  # ... and never UCT's
    with pytest.raises(ValueError, match="compose_every"):
        MCTSConfig(compose_every=-1)
