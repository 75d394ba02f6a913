"""Scored picks (``MCTSConfig.scored_picks``): a rollout choice among a new history's
children drawn from the scores the expanding proposal gave, by the policy's own rule, instead
of a second policy call -- the same decisions as asking, with fewer calls."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
from hyperplan.search.env import Action, SearchEnv, TreeError
from hyperplan.search.llm_policy import LLMPolicyFactory
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import HeuristicPolicy, ScoringPolicy
from hyperplan_bench.eval.treesearch.replay import Recorder, replay_env, replay_policy
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv


class CountingHeuristic(HeuristicPolicy):
    """The heuristic policy counting its proposals, rollout picks and choices."""

    def __init__(self) -> None:
        super().__init__()
        self.counts = {"propose": 0, "rollout": 0, "choose": 0}

    def propose_scored(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                       rng: random.Random) -> tuple[list[Action], dict[str, float] | None]:
        self.counts["propose"] += 1
        return super().propose_scored(env, decisions, k, rng)

    def propose(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                rng: random.Random) -> list[Action]:
        self.counts["propose"] += 1
        return super().propose(env, decisions, k, rng)

    def rollout(self, env: SearchEnv, decisions: Sequence[Action],
                rng: random.Random) -> Action:
        self.counts["rollout"] += 1
        return super().rollout(env, decisions, rng)

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        self.counts["choose"] += 1
        return super().choose(scores, rng)


def _search(env: SearchEnv, policy: Any, seed: int, **config: Any) -> tuple[Any, Any]:
    search = HyperMCTS(env, policy, MCTSConfig(**{"budget": 16, "trace": True, **config}), seed)
    return search, search.run()


@pytest.mark.parametrize("suite", ["shopping", "travel", "qa"])
def test_scored_picks_take_the_decisions_a_second_call_would(suite: str) -> None:
    for i, env in enumerate(load_tasks(suite, 2, 5)):
        on_policy, off_policy = CountingHeuristic(), CountingHeuristic()
        _, on = _search(env, on_policy, task_seed(5, i))
        _, off = _search(env, off_policy, task_seed(5, i), scored_picks=False)
        assert on.trace == off.trace and on.rewards == off.rewards
        assert on_policy.counts["rollout"] == 0 < on_policy.counts["choose"]
        assert off_policy.counts["choose"] == 0
        # every rollout call of the run without them became a choice among scores
        assert on_policy.counts["choose"] == off_policy.counts["rollout"]
        assert on_policy.counts["propose"] == off_policy.counts["propose"]
        assert off.policy_calls - on.policy_calls == on_policy.counts["choose"]
        assert on.policy_calls == on_policy.counts["propose"]


def test_one_call_per_expanded_history_by_hand() -> None:
    # toy: 2 items of 3 products, horizon 2; one rollout expands h_0 and the history after
    # its first step (b = 3 children each), and the end history has no decisions
    policy = CountingHeuristic()
    _, result = _search(ToyShopEnv(0, 2, 3), policy, 0, budget=1, early_stop=False,
                        lam=0.0, hypergraph=False)
    assert [len(t) for t in result.trace] == [2]
    assert policy.counts == {"propose": 2, "rollout": 0, "choose": 2}
    assert result.policy_calls == 2
    _, asked = _search(ToyShopEnv(0, 2, 3), CountingHeuristic(), 0, budget=1,
                       early_stop=False, lam=0.0, hypergraph=False, scored_picks=False)
    assert asked.policy_calls == 4 and asked.trace == result.trace


class PartlyScoring(HeuristicPolicy):
    """Scores only the decisions it proposes, so an evidence-widened child has none."""

    def __init__(self) -> None:
        super().__init__()
        self.rollouts = 0

    def propose_scored(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                       rng: random.Random) -> tuple[list[Action], dict[str, float] | None]:
        picked, scores = super().propose_scored(env, decisions, k, rng)
        assert scores is not None
        return picked, {a.key: scores[a.key] for a in picked}

    def rollout(self, env: SearchEnv, decisions: Sequence[Action],
                rng: random.Random) -> Action:
        self.rollouts += 1
        return super().rollout(env, decisions, rng)


def test_a_child_without_a_score_is_asked_for_as_before() -> None:
    env = load_tasks("shopping", 1, 5)[0]
    partly = PartlyScoring()
    search, result = _search(env, partly, task_seed(5, 0))
    _, full = _search(env, HeuristicPolicy(), task_seed(5, 0))
    assert result.trace == full.trace  # the same draws either way
    widened = [n for n in search.tree.nodes() if n.expanded and n.widened]
    assert widened and partly.rollouts > 0  # the evidence children needed a call
    assert result.policy_calls > full.policy_calls


def test_a_policy_choosing_outside_the_children_is_refused() -> None:
    class Wrong(HeuristicPolicy):
        def choose(self, scores: Sequence[float], rng: random.Random) -> int:
            return len(scores)

    with pytest.raises(TreeError, match="chose index"):
        _search(ToyShopEnv(0, 2, 3), Wrong(), 0, budget=1)


def test_replayed_scored_runs_take_the_recorded_decisions() -> None:
    env = load_tasks("travel", 1, 5)[0]
    recorder = Recorder(env, HeuristicPolicy())
    _, recorded = _search(*recorder.wrapped(), task_seed(5, 0))
    _, replayed = _search(replay_env(recorder), replay_policy(recorder), task_seed(5, 0))
    assert replayed.trace == recorded.trace and replayed.policy_calls == recorded.policy_calls
    assert isinstance(replay_policy(recorder), ScoringPolicy)


def _all_keys_reply() -> dict[str, Any]:
    keys = [f"P{i}.{j}" for i in range(2) for j in range(3)]
    return {"candidates": [{"key": k, "score": 0.9 - 0.1 * n} for n, k in enumerate(keys)]}


def test_a_model_policy_is_asked_once_per_expanded_history() -> None:
    def model_calls(scored: bool) -> tuple[int, Any]:
        factory = LLMPolicyFactory(ScriptedLLM([ScriptedRule(json=_all_keys_reply())]),
                                   rollouts="llm")
        _, result = _search(ToyShopEnv(0, 2, 3), factory(), 0, budget=1, early_stop=False,
                            scored_picks=scored)
        return factory.calls, result

    with_scores, result = model_calls(True)
    asked, without = model_calls(False)
    assert with_scores == 2 == result.policy_calls  # h_0 and the history after step one
    # without them, a second question per history to pick among its children: at h_0 a new
    # prompt (its 3 children, not its 6 decisions); after step one the children are all
    # of its decisions, so the prompt repeats the proposal's and the cache answers it
    assert without.policy_calls == 4 and asked == 3


def test_a_model_policy_with_heuristic_rollouts_gives_no_scores() -> None:
    factory = LLMPolicyFactory(ScriptedLLM([ScriptedRule(json=_all_keys_reply())]))
    policy = factory()
    env = ToyShopEnv(0, 2, 3)
    proposed, scores = policy.propose_scored(env, env.decisions(), 2, random.Random(0))
    assert [a.key for a in proposed] == ["P0.0", "P0.1"] and scores is None
    asking = LLMPolicyFactory(ScriptedLLM([ScriptedRule(json=_all_keys_reply())]),
                              rollouts="llm")()
    _, scores = asking.propose_scored(env, env.decisions(), 2, random.Random(0))
    assert scores is not None and scores["P1.2"] == pytest.approx(0.4)
