"""FLARE (hyperplan.search.flare): MCTS re-run from each committed history, its two budget
accountings, and the rerooted environment it searches."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import pytest

from hyperplan.search.env import Action, Objective, Verdict
from hyperplan.search.flare import FLARE, FLAREConfig, Rerooted, flare, flare_split
from hyperplan.search.mcts import MCTSConfig
from hyperplan_bench.eval.treesearch.runner import (
    ALL_METHODS,
    METHOD_FUNCS,
    METHODS,
    evaluate,
    load_tasks,
)

# three steps of two decisions each; only "b" first leads to the best plan, though "a" looks
# better to the hint (a one-step, greedy reading is misled)
REWARDS = {("a", "x", "p"): 0.3, ("a", "x", "q"): 0.2, ("a", "y", "p"): 0.1,
           ("a", "y", "q"): 0.0, ("b", "x", "p"): 1.0, ("b", "x", "q"): 0.4,
           ("b", "y", "p"): 0.5, ("b", "y", "q"): 0.6}
KEYS = (("a", "b"), ("x", "y"), ("p", "q"))


class DeceptiveEnv:
    """Three steps, two decisions each; the verifier rewards REWARDS."""

    query = "deceptive"
    objectives: Sequence[Objective] = ()
    horizon = 3

    def __init__(self) -> None:
        self.path: tuple[str, ...] = ()

    def reset(self) -> None:
        self.path = ()

    def snapshot(self) -> Any:
        return self.path

    def restore(self, snapshot: Any) -> None:
        self.path = snapshot

    def decisions(self) -> Sequence[Action]:
        return [] if self.is_terminal() else [Action(k) for k in KEYS[len(self.path)]]

    def step(self, action: Action) -> str:
        self.path = (*self.path, action.key)
        return ""

    def is_terminal(self) -> bool:
        return len(self.path) >= 3

    def identity(self, action: Action) -> Hashable:
        return (len(self.path), action.key)

    def recorded(self, action: Action) -> bool:
        return True

    def verify(self) -> Verdict:
        reward = REWARDS.get(self.path, 0.0)
        return Verdict(reward=reward, success=reward >= 1.0)

    def hint(self, action: Action) -> float:
        return 0.9 if action.key in {"a", "y", "q"} else 0.1

    def describe(self) -> str:
        return " ".join(self.path)


class CountingPolicy:
    """Proposes the first k decisions, rolls out with a uniform choice; counts its calls."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def propose(self, env: Any, decisions: Sequence[Action], k: int,
                rng: random.Random) -> list[Action]:
        self.calls += 1
        return list(decisions[:k])

    def rollout(self, env: Any, decisions: Sequence[Action], rng: random.Random) -> Action:
        self.calls += 1
        return decisions[rng.randrange(len(decisions))]


def _config(budget: int, **overrides: Any) -> MCTSConfig:
    return MCTSConfig(budget=budget, branching=2, early_stop=False, **overrides)


def test_rerooted_env_starts_at_the_committed_history_with_the_horizon_left() -> None:
    env = DeceptiveEnv()
    env.step(Action("b"))
    rerooted = Rerooted(env, env.snapshot(), depth=1)
    env.step(Action("x"))
    rerooted.reset()
    assert env.path == ("b",) and rerooted.horizon == 2
    assert [a.key for a in rerooted.decisions()] == ["x", "y"]
    rerooted.step(Action("x"))
    rerooted.step(Action("p"))
    assert rerooted.verify().reward == 1.0  # the whole trajectory, committed prefix included


def test_per_decision_budget_reruns_mcts_after_each_commit() -> None:
    policy = CountingPolicy()
    search = FLARE(DeceptiveEnv(), policy, _config(8), seed=0)
    result = search.run()
    # three decision points with two options each: three re-runs of 8, plus the committed one
    assert search.reruns == 3 and result.rollouts == 3 * 8 + 1
    assert result.method == "flare"
    assert result.notes["budget"] == "8 rollouts per committed decision"
    assert [a.key for a in search.committed] == ["b", "x", "p"]  # lookahead is not misled
    assert result.reward == 1.0 and result.success
    assert result.policy_calls == policy.calls > 0  # every re-run's calls counted
    assert len(result.rewards) == result.rollouts


def test_per_decision_option_and_early_stop() -> None:
    result = flare(DeceptiveEnv(), CountingPolicy(), _config(8), seed=0,
                   options=FLAREConfig(per_decision=3))
    assert result.rollouts <= 3 * 3 + 1
    assert result.notes["budget"] == "3 rollouts per committed decision"
    stopped = flare(DeceptiveEnv(), CountingPolicy(),
                    MCTSConfig(budget=16, branching=2, early_stop=True), seed=0)
    assert stopped.success and stopped.stopped_early and stopped.rollouts <= 16


def test_split_budget_spends_b_in_all_halving_per_rerun() -> None:
    search = FLARE(DeceptiveEnv(), CountingPolicy(), _config(32), seed=1,
                   flare=FLAREConfig(split=True))
    result = search.run()
    # 31 for the re-runs (one kept for the committed trajectory): 16, then 8, then 4
    assert search.reruns == 3 and result.rollouts == 16 + 8 + 4 + 1 <= 32
    assert result.method == "flare_split"
    assert result.notes["budget"] == "B = 32 in all, each re-run half of what is left"
    tight = FLARE(DeceptiveEnv(), CountingPolicy(), _config(2), seed=1,
                  flare=FLAREConfig(split=True))
    spent = tight.run()
    # B = 2: one re-run of 1, then the policy's top proposals, then the committed trajectory
    assert tight.reruns == 1 and spent.rollouts == 2
    assert flare_split(DeceptiveEnv(), CountingPolicy(), _config(32), 1).rollouts == 29


def test_config_is_checked() -> None:
    with pytest.raises(ValueError):
        FLAREConfig(per_decision=0)
    with pytest.raises(ValueError):
        FLAREConfig(per_decision=4, split=True)


def test_same_seed_same_result_on_generated_tasks() -> None:
    env = load_tasks("shopping", 1, 1)[0]
    from hyperplan.search.policies import make_policy

    def run() -> list[str]:
        result = flare(env, make_policy("heuristic"), MCTSConfig(budget=4), seed=3)
        return [a.key for a in result.actions]

    assert run() == run()


def test_registered_beside_the_defaults() -> None:
    assert METHOD_FUNCS["flare"] is flare and METHOD_FUNCS["flare_split"] is flare_split
    assert "flare" not in METHODS and {"flare", "flare_split", "tot", "reflexion",
                                       "cot"} <= set(ALL_METHODS)
    out = evaluate(load_tasks("toy", 2, 0), MCTSConfig(budget=4),
                   methods=["hypermcts", "flare", "flare_split"], seed=0)
    assert out["methods"]["flare"]["rollouts_per_case"] > out["methods"]["flare_split"][
        "rollouts_per_case"]
    assert out["methods"]["flare_split"]["rollouts_per_case"] <= 4
    assert "hypermcts_minus_flare" in out["paired"]
