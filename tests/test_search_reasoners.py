"""The llm-reasoners bridge (issue 5, item 5): its MCTS runs on our environments under our
budget accounting. Needs the optional package ``reasoners`` (required in CI)."""

from __future__ import annotations

import importlib.util
import os
import random

import pytest

from hyperplan.search.mcts import MCTSConfig
from hyperplan.search.policies import HeuristicPolicy, RandomPolicy
from hyperplan_bench.eval.treesearch.reasoners_bridge import compare, reasoners_mcts, rollout_index
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv, make_toy_tasks


@pytest.fixture
def needs_reasoners() -> None:
    if importlib.util.find_spec("reasoners") is None:
        message = ("llm-reasoners is not installed (pip install torch==2.13.0 transformers && "
                   "pip install --no-deps llm-reasoners==1.0.2)")
        if os.environ.get("CI") == "true" and \
                os.environ.get("HYPERPLAN_REASONERS_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)


def test_budget_is_counted_in_evaluated_trajectories(needs_reasoners: None) -> None:
    env = ToyShopEnv(seed=3, n_items=3, n_products=5)
    config = MCTSConfig(budget=12, branching=3, early_stop=False)
    result = reasoners_mcts(env, HeuristicPolicy(), config, seed=7)
    assert result.method == "reasoners_mcts"
    assert 1 <= result.rollouts <= 12 and len(result.rewards) == result.rollouts
    assert result.reward == max(result.rewards)  # the best evaluated trajectory is the answer
    assert len(result.actions) == 3  # one commit per item: a complete trajectory
    env.reset()
    for action in result.actions:  # the answer replays to the same verdict
        env.step(action)
    assert env.verify().reward == result.reward
    assert result.timing.total >= result.timing.env + result.timing.policy


def test_same_seed_same_answer_and_early_stop(needs_reasoners: None) -> None:
    config = MCTSConfig(budget=40, branching=4)
    first = reasoners_mcts(ToyShopEnv(seed=1), HeuristicPolicy(), config, seed=5)
    again = reasoners_mcts(ToyShopEnv(seed=1), HeuristicPolicy(), config, seed=5)
    assert [a.key for a in first.actions] == [a.key for a in again.actions]
    assert first.rewards == again.rewards
    if first.success and first.reward >= 1.0:
        assert first.stopped_early and first.rollouts == first.rewards.index(1.0) + 1


def test_a_failing_step_is_recorded_not_fatal(needs_reasoners: None) -> None:
    env = ToyShopEnv(seed=2, n_items=2, n_products=3, fail_keys=["P0.0", "P0.1"])
    config = MCTSConfig(budget=10, branching=3, early_stop=False)
    result = reasoners_mcts(env, RandomPolicy(), config, seed=0)
    assert result.failures >= 1 and 0.0 in result.rewards  # failed rollouts count, score 0
    assert 1 <= result.rollouts <= 10 and result.reward > 0.0
    assert all(a.key not in ("P0.0", "P0.1") for a in result.actions)


def test_compare_reports_ours_beside_theirs_on_the_same_tasks(needs_reasoners: None) -> None:
    tasks = make_toy_tasks(3, seed=4)
    result = compare(tasks, MCTSConfig(budget=8, branching=3), seed=4)
    assert set(result["methods"]) == {"hypermcts", "uct", "reasoners_mcts"}
    assert result["methods"]["reasoners_mcts"]["rollouts"] <= 8
    assert result["paired"]["uct_minus_reasoners_mcts"]["n"] == 3


def test_rollout_index_follows_the_heuristic_rule() -> None:
    rng = random.Random(0)
    greedy = HeuristicPolicy(temperature=0.0, epsilon=0.0)
    assert rollout_index(greedy, [0.2, 0.9, 0.5], rng) == 1
    assert rollout_index(RandomPolicy(), [0.2, 0.1, 0.7], rng) == 2
    explore = HeuristicPolicy(temperature=0.0, epsilon=1.0)
    picks = {rollout_index(explore, [0.2, 0.9, 0.5], rng) for _ in range(60)}
    assert picks == {0, 1, 2}
