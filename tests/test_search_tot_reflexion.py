"""ToT-BFS (hyperplan.search.tot), Reflexion and CoT (hyperplan.search.reflexion): what each
asks the policy, what it verifies, and how it spends the rollout budget."""

from __future__ import annotations

from hyperplan.search.mcts import MCTSConfig
from hyperplan.search.reflexion import Reflexion, cot, reflexion
from hyperplan.search.tot import ToT, tot
from hyperplan_bench.eval.treesearch.runner import METHOD_FUNCS, evaluate, load_tasks
from search_helpers import FirstPolicy, ReflectingPolicy, TinyEnv


def _config(budget: int = 8) -> MCTSConfig:
    return MCTSConfig(budget=budget, branching=2, early_stop=False, trace=True)


def test_tot_keeps_the_best_valued_history_and_verifies_finished_ones() -> None:
    policy = FirstPolicy()
    search = ToT(TinyEnv(), policy, _config(), seed=0, width=1)
    result = search.run()
    # level 1: root -> a (0.9), b (0.3); width 1 keeps a; level 2: a -> x, y, both finished
    assert result.trace == [("a", "x"), ("a", "y")]
    assert result.rollouts == 2 and result.reward == 0.2
    # two proposals and four values (one per child), no rollout choice
    assert policy.asked == ["propose", "propose"] and result.policy_calls == 2 + 4
    assert search.levels == 2 and result.method == "tot"


def test_tot_width_defaults_to_b_and_stops_at_the_budget() -> None:
    result = tot(TinyEnv(), FirstPolicy(), _config(), seed=0)
    assert result.rollouts == 4 and result.reward == 0.7  # both histories kept at b = 2
    short = tot(TinyEnv(), FirstPolicy(), _config(budget=1), seed=0)
    assert short.rollouts == 1


def test_reflexion_reflects_on_failed_trials_and_counts_the_calls() -> None:
    policy = ReflectingPolicy()
    search = Reflexion(TinyEnv(), policy, _config(budget=3), seed=0)
    result = search.run()
    assert result.rollouts == 3 and result.trace == [("a", "x")] * 3
    # two proposals per trial, a reflection after each failed trial but the last
    assert policy.asked.count("reflect") == 2 and len(search.reflections) == 2
    assert result.policy_calls == 3 * 2 + 2
    assert result.notes["reflection"] == "2 reflections"


def test_reflexion_without_a_model_says_the_step_was_skipped() -> None:
    result = reflexion(TinyEnv(), FirstPolicy(), _config(budget=2), seed=0)
    assert result.notes["reflection"] == "skipped (first policy)"
    assert result.rollouts == 2 and result.policy_calls == 4


def test_cot_is_one_greedy_rollout_named_cot() -> None:
    policy = FirstPolicy()
    result = cot(TinyEnv(), policy, _config(), seed=0)
    assert result.method == "cot" and result.rollouts == 1
    assert [a.key for a in result.actions] == ["a", "x"] and result.policy_calls == 2
    assert METHOD_FUNCS["cot"] is cot and METHOD_FUNCS["tot"] is tot


def test_on_generated_tasks_with_the_heuristic_policy() -> None:
    out = evaluate(load_tasks("shopping", 2, 1), MCTSConfig(budget=4),
                   methods=["hypermcts", "tot", "reflexion", "cot"], seed=1)
    methods = out["methods"]
    assert methods["cot"]["rollouts_per_case"] == 1.0
    assert methods["reflexion"]["reflection"] == "skipped (heuristic policy)"
    assert 1 <= methods["tot"]["rollouts_per_case"] <= 4
    assert methods["tot"]["policy_calls_per_case"] > 0


def test_reflexion_with_the_llm_policy_shows_its_reflection_in_later_prompts() -> None:
    from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
    from hyperplan.search.llm_policy import LLMPolicyFactory
    from hyperplan_bench.eval.treesearch.toy import ToyShopEnv

    reply = {"candidates": [{"key": "P1.2", "score": 0.9}, {"key": "P0.0", "score": 0.5}]}
    llm = ScriptedLLM([ScriptedRule(text="Check the budget first.",
                                    system_pattern="failed attempt"),
                       ScriptedRule(json=reply)])
    policy = LLMPolicyFactory(llm)()
    result = reflexion(ToyShopEnv(0, 2, 3), policy, MCTSConfig(budget=3, branching=2), seed=0)
    assert not result.success and result.rollouts == 3
    assert policy.reflections == ["Check the budget first."] * 2  # none after the last trial
    assert result.notes["reflection"] == "2 reflections"
    later = [c for c in llm.calls if "Reflections on earlier failed attempts" in str(c)]
    assert later  # the trials after the first failure carry the reflection
