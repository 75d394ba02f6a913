"""The LLM policy as the benchmark runs it: one model, one shared answer cache, a call budget,
and the ``search run --policy llm`` options (the real server: tests/test_llm_server.py)."""

from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.llm.budget import Accounting, Budget
from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
from hyperplan.search.llm_policy import LLMPolicyFactory
from hyperplan.search.mcts import MCTSConfig, hypermcts
from hyperplan.search.policies import HeuristicPolicy
from hyperplan_bench.eval.treesearch.runner import evaluate
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv

REPLY = {"candidates": [{"key": "P1.2", "score": 0.9}, {"key": "P0.0", "score": 0.5}]}


def test_policies_of_one_factory_share_the_models_answers() -> None:
    llm = ScriptedLLM([ScriptedRule(json=REPLY, component="mcts-policy")])
    factory = LLMPolicyFactory(llm)
    env = ToyShopEnv(0, 2, 3)
    first, second = factory(), factory()
    a = first.propose(env, env.decisions(), 2, random.Random(0))
    b = second.propose(env, env.decisions(), 2, random.Random(1))
    assert [x.key for x in a] == [x.key for x in b] == ["P1.2", "P0.0"]
    assert len(llm.calls) == 1 and factory.calls == 1 and factory.answers == 1
    assert factory.fallbacks == 0


def test_factory_rollouts_by_the_heuristic_or_by_the_model() -> None:
    env = ToyShopEnv(0, 2, 3)
    cheap = LLMPolicyFactory(ScriptedLLM([ScriptedRule(json=REPLY)]))()
    assert isinstance(cheap.rollout_policy, HeuristicPolicy)
    cheap.rollout(env, env.decisions(), random.Random(0))
    assert cheap.calls == 0  # simulation does not ask the model
    asking = LLMPolicyFactory(ScriptedLLM([ScriptedRule(json=REPLY)]), rollouts="llm")()
    assert asking.rollout_policy is None
    assert asking.rollout(env, env.decisions(), random.Random(0)).key in {"P1.2", "P0.0"}
    assert asking.calls == 1
    with pytest.raises(ValueError, match="rollouts"):
        LLMPolicyFactory(ScriptedLLM([]), rollouts="sometimes")


def test_an_exhausted_call_budget_falls_back_without_stopping_the_search() -> None:
    accounting = Accounting(Budget(max_calls=1))
    llm = ScriptedLLM([ScriptedRule(json=REPLY)], accounting=accounting)
    factory = LLMPolicyFactory(llm, rollouts="llm")
    result = hypermcts(ToyShopEnv(0, 2, 3), factory(), MCTSConfig(budget=6, branching=2), 0)
    assert result.rollouts >= 1
    assert factory.calls >= 2 and factory.fallbacks >= 1  # the second call hit the budget
    assert accounting.stopped is not None and "budget exhausted" in str(accounting.stopped)


def test_every_method_of_a_benchmark_reads_the_same_cache() -> None:
    llm = ScriptedLLM([ScriptedRule(json=REPLY)])
    factory = LLMPolicyFactory(llm)
    tasks = [ToyShopEnv(0, 2, 3)]
    evaluate(tasks, MCTSConfig(budget=4, branching=2), policy=factory, seed=0,
             methods=["hypermcts", "uct"])
    # both searches expand the same root: the second pays nothing for it
    assert factory.answers == len(llm.calls) and factory.calls == len(llm.calls)


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "llm"], "--policy llm needs --llm URL"),
    (["--policy", "heuristic", "--llm", "http://127.0.0.1:9/v1"], "are for --policy llm"),
    (["--policy", "oracle"], "unknown --policy 'oracle'"),
    (["--policy", "llm", "--llm", "http://127.0.0.1:9/v1", "--llm-rollouts", "some"],
     "--llm-rollouts must be heuristic or llm"),
    (["--policy", "llm", "--llm", "http://127.0.0.1:9/v1", "--max-llm-calls", "0"],
     "--max-llm-calls must be >= 1"),
    (["--policy", "llm", "--llm", "http://127.0.0.1:9/v1"], "cannot reach the LLM endpoint"),
])
def test_mcts_policy_options_fail_with_one_line(args: list[str], message: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPLAN_LLM_BASE_URL", raising=False)
    result = CliRunner().invoke(app, ["search", "run", "--suite", "toy", "--tasks", "1",
                                      "--rollouts", "2", "--json", *args])
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())


def test_decisions_named_by_key_label_or_unprefixed_key() -> None:
    from hyperplan.search.env import Action, ActionKind
    from hyperplan.search.llm_policy import decision_names

    decisions = [Action("search:backpack", ActionKind.INFO, label="search backpack"),
                 Action("view:a1", ActionKind.INFO, label="view item"),
                 Action("view:a2", ActionKind.INFO, label="view item"),
                 Action("choose:a1", label="choose a1"),
                 Action("a1")]
    names = decision_names(decisions)
    assert names["search:backpack"] == names["backpack"] == names["search backpack"]
    assert "view item" not in names  # two decisions share the label
    assert names["a1"] == "a1"  # a key wins over another decision's unprefixed key
    assert names["a2"] == "view:a2"


def test_out_of_range_scores_are_clamped_and_prefixless_keys_read() -> None:
    reply = {"candidates": [{"key": "p1.2", "score": 2.0}, {"key": "P0.0", "score": -1}]}
    llm = ScriptedLLM([ScriptedRule(json=reply)])
    policy = LLMPolicyFactory(llm)()
    env = ToyShopEnv(0, 2, 3)
    assert policy.score(env, env.decisions(), 2) == [("P1.2", 1.0), ("P0.0", 0.0)]
    assert policy.fallbacks == 0


def test_an_llm_run_whose_answers_fall_back_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from hyperplan_bench.cli.search_cmds import _warn_llm

    _warn_llm({"stopped": "budget exhausted: llm_calls used 3 of 3", "errors": 2, "calls": 5,
               "histories": 4, "fallbacks": 3})
    captured = capsys.readouterr()
    err = " ".join((captured.out + captured.err).split())
    assert "budget exhausted" in err and "2 of 5 requests failed" in err
    assert "3 of 4 answers named no valid decision" in err
    _warn_llm({"stopped": None, "errors": 0, "calls": 4, "histories": 4, "fallbacks": 1})
    captured = capsys.readouterr()
    assert captured.out + captured.err == ""


def test_a_long_decision_list_shows_the_most_promising_by_hint() -> None:
    from hyperplan.search.llm_policy import LLMPolicy

    env = ToyShopEnv(0, 5, 6)  # 30 decisions
    decisions = list(env.decisions())
    policy = LLMPolicy(ScriptedLLM([]), max_decisions=4)
    shown = policy.shown(env, decisions)
    hints = [env.hint(a) for a in decisions]
    cut = sorted(hints, reverse=True)[3]
    assert len(shown) == 4 and all(env.hint(a) >= cut for a in shown)
    assert shown == [a for a in decisions if a in shown]  # the environment's order
    prompt = policy._prompt(env, decisions, 2)
    assert "(4 of 30, the most promising by the environment's hint)" in prompt
    assert all(f"- {a.key} " in prompt for a in shown)
    assert LLMPolicy(ScriptedLLM([])).shown(env, decisions) == decisions


def test_the_prompt_states_the_query_once() -> None:
    from hyperplan.search.llm_policy import LLMPolicy
    from hyperplan_bench.eval.treesearch.runner import load_tasks

    env = load_tasks("shopping", 1, 1)[0]
    env.reset()
    policy = LLMPolicy(ScriptedLLM([]))
    prompt = policy._prompt(env, env.decisions(), 3)
    assert prompt.count(env.query) == 1 and "History:\n(no steps yet)" in prompt
    env.step(env.decisions()[0])
    prompt = policy._prompt(env, env.decisions(), 3)
    assert prompt.count(env.query) == 1 and "History:\n1. " in prompt
    toy = ToyShopEnv(0, 2, 3)
    assert "History:\nchosen: nothing yet" in policy._prompt(toy, toy.decisions(), 2)


def test_a_prompt_too_long_for_the_window_is_asked_again_with_fewer_decisions() -> None:
    from hyperplan.llm.types import Message
    from hyperplan.search.llm_policy import _SYSTEM, LLMPolicy

    env = ToyShopEnv(0, 5, 6)  # 30 decisions
    decisions = list(env.decisions())
    probe = LLMPolicy(ScriptedLLM([]))

    def tokens(n: int) -> int:
        text = _SYSTEM + probe._prompt(env, decisions, 2, n)
        return -(-len(text) // 4)

    window = tokens(15)  # the full list does not fit, half of it does
    assert tokens(30) > window
    key = probe.shown(env, decisions, 15)[0].key
    llm = ScriptedLLM([ScriptedRule(json={"candidates": [{"key": key, "score": 0.8}]})],
                      context_window=window)
    policy = LLMPolicy(llm)
    assert policy.score(env, decisions, 2) == [(key, 0.8)]
    assert len(llm.calls) == 1 and policy.calls == 1 and policy.fallbacks == 0
    assert "(15 of 30," in llm.calls[0].messages[-1].content
    assert isinstance(llm.calls[0].messages[0], Message)
    # a window nothing fits: two cuts, then a uniform fallback, and the search goes on
    tiny = LLMPolicy(ScriptedLLM([], context_window=10))
    assert tiny.score(env, decisions, 2) == [] and tiny.fallbacks == 1
    assert len(tiny.propose(env, decisions, 2, random.Random(0))) == 2
