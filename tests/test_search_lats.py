"""The LATS-style baseline (hyperplan.search.lats) and the policy-call counts of every method."""

from __future__ import annotations

from typing import Any

import pytest

from hyperplan.search.lats import LATS, LATSConfig, lats, mixed_value
from hyperplan.search.mcts import MCTSConfig
from hyperplan.search.policies import HeuristicPolicy
from hyperplan_bench.eval.treesearch.runner import METHOD_FUNCS, METHODS, evaluate, load_tasks
from search_helpers import FirstPolicy, ReflectingPolicy, TinyEnv


def _tiny(policy: FirstPolicy, budget: int = 2) -> tuple[LATS, TinyEnv]:
    env = TinyEnv()
    search = LATS(env, policy, MCTSConfig(budget=budget, branching=2, early_stop=False,
                                          trace=True), seed=0)
    return search, env


def test_mixed_value_backup_matches_a_hand_computation() -> None:
    search, _ = _tiny(FirstPolicy())
    result = search.run()
    # iteration 1: root -> [a (0.9), b (0.3)]; rollout a -> x, reward 0.2
    # iteration 2: UCT takes unvisited b; b -> [x (0.6), y (0.4)]; verify b x, reward 0.7
    assert result.trace == [("a", "x"), ("b", "x")]
    assert search.tree is not None
    a, b = search.tree.root.edges
    assert (a.action.key, a.n, a.w) == ("a", 1, pytest.approx(0.5 * 0.9 + 0.5 * 0.2))
    assert (b.action.key, b.n, b.w) == ("b", 1, pytest.approx(0.5 * 0.6 + 0.5 * 0.7))
    bx = b.child.edges[0]
    assert (bx.action.key, bx.n, bx.w) == ("x", 1, pytest.approx(0.65))
    assert search.tree.root.n == 2
    assert result.reward == pytest.approx(0.7)
    assert mixed_value(0.9, 0.2, 0.5) == pytest.approx(0.55)


def test_value_weight_is_a_config_field() -> None:
    env = TinyEnv()
    search = LATS(env, FirstPolicy(), MCTSConfig(budget=1, branching=2, early_stop=False),
                  lats=LATSConfig(value_weight=0.25))
    search.run()
    assert search.tree is not None
    assert search.tree.root.edges[0].w == pytest.approx(0.25 * 0.9 + 0.75 * 0.2)
    assert LATSConfig().value_weight == 0.5
    with pytest.raises(ValueError):
        LATSConfig(value_weight=1.5)


def test_each_new_child_is_valued_by_the_hint() -> None:
    search, env = _tiny(FirstPolicy())
    search.run()
    assert env.hints == [((), "a"), ((), "b"), (("b",), "x"), (("b",), "y")]
    assert {(e.action.key, v) for e, v in search.values.items()} == {
        ("a", 0.9), ("b", 0.3), ("x", 0.6), ("y", 0.4)}


def test_policy_calls_are_counted_by_hand() -> None:
    policy = FirstPolicy()
    search, _ = _tiny(policy)
    result = search.run()
    # iteration 1: 1 proposal + 2 values + 1 rollout step; iteration 2: 1 proposal + 2 values
    assert policy.asked == ["propose", "rollout", "propose"]
    assert result.policy_calls == 7
    assert result.rollouts == 2


def test_reflection_is_asked_of_a_model_policy_on_failure() -> None:
    policy = ReflectingPolicy()
    search, _ = _tiny(policy)
    result = search.run()
    assert search.reflections == ["a x scored 0.2", "b x scored 0.7"]
    assert result.notes["reflection"] == "2 reflections"
    assert result.policy_calls == 7 + 2


def test_reflection_is_skipped_with_the_heuristic_policy() -> None:
    env = load_tasks("toy", 1, 0)[0]
    result = lats(env, HeuristicPolicy(), MCTSConfig(budget=8), seed=3)
    assert result.notes["reflection"] == "skipped (heuristic policy)"


@pytest.mark.parametrize("budget", [1, 2, 5, 16])
def test_never_exceeds_the_rollout_budget(budget: int) -> None:
    for env in load_tasks("toy", 4, 1):
        result = lats(env, HeuristicPolicy(), MCTSConfig(budget=budget), seed=7)
        assert 1 <= result.rollouts <= budget
        assert len(result.rewards) == result.rollouts


def test_deterministic_per_seed() -> None:
    config = MCTSConfig(budget=16, trace=True)

    def run(seed: int) -> tuple[Any, ...]:
        env = load_tasks("toy", 1, 2)[0]
        r = lats(env, HeuristicPolicy(), config, seed=seed)
        return (r.trace, r.rewards, r.policy_calls)

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_registered_with_cost_and_paired_difference() -> None:
    assert "lats" in METHODS and METHOD_FUNCS["lats"] is lats
    out = evaluate(load_tasks("toy", 3, 0), MCTSConfig(budget=4), seed=0)
    for summary in out["methods"].values():
        assert summary["rollouts_per_case"] == summary["rollouts"]
        assert summary["policy_calls_per_case"] > 0
    assert out["methods"]["greedy"]["rollouts_per_case"] == 1.0
    assert out["methods"]["lats"]["reflection"] == "skipped (heuristic policy)"
    assert set(out["paired"]) == {f"hypermcts_minus_{m}" for m in METHODS if m != "hypermcts"}
    assert next(iter(out["paired"])) == "hypermcts_minus_uct"  # the key that was there first


def test_greedy_policy_calls_are_one_per_step() -> None:
    env = TinyEnv()
    policy = FirstPolicy()
    result = METHOD_FUNCS["greedy"](env, policy, MCTSConfig(budget=4), 0)
    assert policy.asked == ["propose", "propose"]
    assert result.policy_calls == 2


def test_sweep_gives_curves_for_every_method(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from hyperplan.cli import app

    result = CliRunner().invoke(app, ["search", "sweep", "--suite", "toy", "--tasks", "2",
                                      "--rollouts", "2,4", "--lams", "0,0.5", "--methods",
                                      "all", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| budget | λ=0 | λ=0.5 | best-of-N | greedy | beam | lats |" in result.output
    assert (tmp_path / "mcts_sweep_toy_methods.png").stat().st_size > 1000
    bad = CliRunner().invoke(app, ["search", "sweep", "--suite", "toy", "--methods", "nope",
                                   "--output", str(tmp_path)])
    assert bad.exit_code != 0


def test_lats_reflects_with_the_llm_policy_and_later_prompts_show_it() -> None:
    from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
    from hyperplan.search.llm_policy import LLMPolicyFactory
    from hyperplan_bench.eval.treesearch.toy import ToyShopEnv

    reply = {"candidates": [{"key": "P1.2", "score": 0.9}, {"key": "P0.0", "score": 0.5}]}
    llm = ScriptedLLM([ScriptedRule(text="Check the budget first.",
                                    system_pattern="failed attempt"),
                       ScriptedRule(json=reply)])
    factory = LLMPolicyFactory(llm)
    policy = factory()
    result = lats(ToyShopEnv(0, 2, 3), policy, MCTSConfig(budget=4, branching=2), seed=0)
    assert not result.success
    assert policy.reflections == ["Check the budget first."] * result.rollouts
    assert result.notes["reflection"] == f"{result.rollouts} reflections"
    later = [c for c in llm.calls if "Reflections on earlier failed attempts" in str(c)]
    assert later  # proposals after the first failure carry the reflection
