"""Helpers the rule tests of HyperMCTS share (tests/test_search_pruning.py, _free_last.py,
_ending_last.py): a rollout chooser that must not be asked, a search run on one generated
task, every rollout's action keys kept, and every rollout's choices walked with the search's
state as it stood before that rollout."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from hyperplan.search.env import Action, Objective, SearchEnv, Verdict
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import make_policy
from hyperplan.search.timing import TimedPolicy
from hyperplan.search.tree import Edge, Node
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed


class NoCall:
    """A policy that must not be asked (:func:`no_call`)."""

    name = "no-call"

    def propose(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                rng: random.Random) -> list[Action]:
        raise AssertionError("the policy was asked although one child was left")

    def rollout(self, env: SearchEnv, decisions: Sequence[Action],
                rng: random.Random) -> Action:
        raise AssertionError("the policy was asked although one child was left")


def no_call(search: HyperMCTS) -> HyperMCTS:
    """``search`` with a policy that must not be asked from now on."""
    search.policy = TimedPolicy(NoCall())
    return search


def generated_search(suite: str, tasks: int, task: int, **overrides: Any) -> HyperMCTS:
    """HyperMCTS with the heuristic policy on task ``task`` of ``tasks`` generated tasks of
    ``suite`` (dev seed 5), B = 24 without early stop, the trace kept; ``overrides`` are
    further configuration fields. Returns the search after its run."""
    config = replace(MCTSConfig(budget=24, early_stop=False, trace=True), **overrides)
    env = load_tasks(suite, tasks, 5)[task]
    search = HyperMCTS(env, make_policy("heuristic"), config, task_seed(5, task))
    search.run()
    return search


def choices_before(
    run: Callable[..., HyperMCTS], budget: int,
) -> Iterator[tuple[HyperMCTS, Node, Edge]]:
    """Every rollout k = 1 .. budget - 1 of ``run()`` walked down its final tree: per history
    on the rollout's path, the search as it stood before rollout k (``run(budget=k)``, whose
    rollouts must be the full run's first k), the history and the child the rollout took."""
    full = run()
    assert full.tree is not None
    for k in range(1, budget):
        before = run(budget=k)
        assert before.trace == full.trace[:k]
        node = full.tree.root
        for key in full.trace[k]:
            taken = next(e for e in node.edges if e.action.key == key)
            yield before, node, taken
            node = taken.child


# A two-step tree of fixed hints and rewards, and policies that take the first decisions
# (the LATS, ToT and Reflexion tests).

HINTS = {(): {"a": 0.9, "b": 0.3}, ("a",): {"x": 0.6, "y": 0.4}, ("b",): {"x": 0.6, "y": 0.4}}
REWARDS = {("a", "x"): 0.2, ("a", "y"): 0.1, ("b", "x"): 0.7, ("b", "y"): 0.0}


class TinyEnv:
    """Two steps, two decisions each, fixed hints and rewards; counts its hint calls."""

    query = "tiny"
    objectives: Sequence[Objective] = ()
    horizon = 2

    def __init__(self) -> None:
        self.path: tuple[str, ...] = ()
        self.hints: list[tuple[tuple[str, ...], str]] = []

    def reset(self) -> None:
        self.path = ()

    def snapshot(self) -> Any:
        return self.path

    def restore(self, snapshot: Any) -> None:
        self.path = snapshot

    def decisions(self) -> Sequence[Action]:
        return [] if self.is_terminal() else [Action(k) for k in HINTS[self.path]]

    def step(self, action: Action) -> str:
        self.path = (*self.path, action.key)
        return ""

    def is_terminal(self) -> bool:
        return len(self.path) >= 2

    def identity(self, action: Action) -> Hashable:
        return action.key

    def recorded(self, action: Action) -> bool:
        return True

    def verify(self) -> Verdict:
        reward = REWARDS.get(self.path, 0.0)
        return Verdict(reward=reward, success=reward >= 1.0)

    def hint(self, action: Action) -> float:
        self.hints.append((self.path, action.key))
        return HINTS[self.path][action.key]

    def describe(self) -> str:
        return " ".join(self.path)


class FirstPolicy:
    """Proposes the first k decisions, rolls out with the first; optionally reflects."""

    name = "first"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def propose(self, env: Any, decisions: Sequence[Action], k: int,
                rng: random.Random) -> list[Action]:
        self.asked.append("propose")
        return list(decisions[:k])

    def rollout(self, env: Any, decisions: Sequence[Action], rng: random.Random) -> Action:
        self.asked.append("rollout")
        return decisions[0]


class ReflectingPolicy(FirstPolicy):
    name = "reflecting"

    def reflect(self, env: Any, actions: Sequence[Action], verdict: Verdict) -> str:
        self.asked.append("reflect")
        return f"{' '.join(a.key for a in actions)} scored {verdict.reward}"
