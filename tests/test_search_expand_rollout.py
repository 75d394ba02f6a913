"""In-tree rollouts (``MCTSConfig.expand_rollout``, issue 5).

Pinned: at lam = 0 the search with ``expand_rollout`` is UCT with in-tree rollouts decision for
decision, against an independent reference written from the docstring (replaying actions
instead of restoring snapshots), and it never reads the hypergraph; every evaluated trajectory
is a path of the tree, and every edge's N(h, a) counts the evaluated trajectories through it
(backup along the whole path); the budget is respected; failed steps are recorded as failed
rollouts, not errors.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.search.baselines import uct
from hyperplan.search.env import SearchEnv
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, hypermcts
from hyperplan.search.policies import HeuristicPolicy, Policy, RandomPolicy
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv
from search_reference import RefNode, Unreadable, ref_backup, ref_children, ref_descend


def reference_in_tree_uct(
    env: SearchEnv, policy: Policy, budget: int, b: int, c: float, seed: int,
    branch_on: str = "commit", widen: float = 0.0,
) -> list[tuple[str, ...]]:
    """UCT whose rollout expands every history it passes (b children by the expansion rule)
    and takes the policy's rollout action among the children (a single child as is)."""
    rng = random.Random(seed)
    root = RefNode(None, 0)
    horizon = env.horizon
    traces: list[tuple[str, ...]] = []
    for _ in range(budget):
        env.reset()
        node, path, keys = ref_descend(env, policy, root, widen, c, rng)
        while node.children is None and node.depth < horizon and not env.is_terminal():
            decisions = env.decisions()
            proposed = ref_children(env, policy, decisions, b, rng, branch_on) if decisions else []
            node.children = [RefNode(a, node.depth + 1) for a in proposed]
            if not node.children:
                break
            if len(node.children) == 1:
                child = node.children[0]
            else:
                action = policy.rollout(env, [ch.action for ch in node.children
                                              if ch.action is not None], rng)
                child = next(ch for ch in node.children
                             if ch.action is not None and ch.action.key == action.key)
            assert child.action is not None
            env.step(child.action)
            keys.append(child.action.key)
            path.append(child)
            node = child
        ref_backup(root, path, env.verify().reward)
        traces.append(tuple(keys))
    return traces


@pytest.mark.parametrize("widen", [0.0, 0.25])
@pytest.mark.parametrize("info", [False, True])
@pytest.mark.parametrize("branch_on", ["commit", "all"])
@pytest.mark.parametrize("seed", [3, 11])
def test_lambda_zero_in_tree_rollouts_equal_reference_uct(
    seed: int, branch_on: str, info: bool, widen: float
) -> None:
    config = MCTSConfig(budget=60, branching=3, c=0.8, lam=0.0, early_stop=False, trace=True,
                        branch_on=branch_on, widen=widen, expand_rollout=True)
    policy = HeuristicPolicy(temperature=0.5)
    ref = reference_in_tree_uct(ToyShopEnv(seed, 4, 5, info=info), policy, 60, 3, 0.8, seed,
                                branch_on=branch_on, widen=widen)
    hyper0 = HyperMCTS(ToyShopEnv(seed, 4, 5, info=info), policy, config, seed).run()
    plain = uct(ToyShopEnv(seed, 4, 5, info=info), policy, config, seed)
    guided0 = HyperMCTS(ToyShopEnv(seed, 4, 5, info=info), policy,
                        replace(config, rollout_guidance=True), seed).run()
    assert hyper0.trace == ref
    assert plain.trace == ref
    assert guided0.trace == ref
    # the option really changes the search
    off = HyperMCTS(ToyShopEnv(seed, 4, 5, info=info), policy,
                    replace(config, expand_rollout=False), seed).run()
    assert off.trace != ref


@pytest.mark.parametrize("info", [False, True])
def test_lambda_zero_never_reads_the_hypergraph(info: bool) -> None:
    config = MCTSConfig(budget=50, branching=2, lam=0.0, early_stop=False, trace=True,
                        rollout_guidance=True, expand_rollout=True)
    search = HyperMCTS(ToyShopEnv(2, 3, 6, info=info), HeuristicPolicy(temperature=0.5),
                       config, 2)
    search.hypergraph = Unreadable()
    result = search.run()
    assert search.hypergraph.rollouts == 50
    again = HyperMCTS(ToyShopEnv(2, 3, 6, info=info), HeuristicPolicy(temperature=0.5),
                      config, 2).run()
    plain = uct(ToyShopEnv(2, 3, 6, info=info), HeuristicPolicy(temperature=0.5), config, 2)
    assert result.trace == again.trace == plain.trace


@pytest.mark.parametrize("lam", [0.0, 0.5])
@pytest.mark.parametrize("k", [1, 7, 40])
def test_tree_holds_every_evaluated_path(lam: float, k: int) -> None:
    config = MCTSConfig(budget=k, branching=3, lam=lam, early_stop=False, trace=True,
                        expand_rollout=True)
    search = HyperMCTS(ToyShopEnv(5, 4, 5, info=True), HeuristicPolicy(temperature=0.5),
                       config, 5)
    result = search.run()
    assert search.tree is not None
    assert result.rollouts == k == search.tree.root.n
    histories = set(search.tree.histories())
    through: Counter[tuple[str, ...]] = Counter()
    for keys in result.trace:
        assert keys in histories  # the whole evaluated trajectory is a tree path
        assert sum(key.startswith("P") for key in keys) == 4  # complete plans
        for i in range(1, len(keys) + 1):
            through[keys[:i]] += 1
    # backup along the whole path: N(h, a) = evaluated trajectories through (h, a)
    stack = [(search.tree.root, ())]
    while stack:
        node, prefix = stack.pop()
        for edge in node.edges:
            keys = (*prefix, edge.action.key)
            assert edge.n == through[keys] == edge.child.n
            assert len(node.edges) <= 3 + node.widened
            stack.append((edge.child, keys))


def test_positive_lambda_changes_in_tree_decisions_somewhere() -> None:
    differ = 0
    for seed in range(4):
        config = MCTSConfig(budget=40, branching=3, lam=0.5, early_stop=False, trace=True,
                            expand_rollout=True)
        hyper = hypermcts(ToyShopEnv(seed, 4, 6), HeuristicPolicy(temperature=0.5), config, seed)
        plain = uct(ToyShopEnv(seed, 4, 6), HeuristicPolicy(temperature=0.5), config, seed)
        differ += hyper.trace != plain.trace
    assert differ > 0


@pytest.mark.parametrize("method", [hypermcts, uct])
def test_budget_respected(method: object) -> None:
    assert callable(method)
    for seed in range(3):
        config = MCTSConfig(budget=17, branching=3, early_stop=False, expand_rollout=True)
        result = method(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), config, seed)
        assert result.rollouts == 17 == len(result.rewards)
        assert len(result.actions) == 4
        assert result.reward == max(result.rewards)
        assert result.timing.total >= result.timing.policy + result.timing.env - 1e-9
        stopping = method(ToyShopEnv(seed, 4, 5), HeuristicPolicy(),
                          replace(config, early_stop=True), seed)
        assert 1 <= stopping.rollouts <= 17


@pytest.mark.parametrize("lam", [0.0, 0.5])
def test_failed_steps_recorded_not_fatal(lam: float) -> None:
    bad = [f"P{i}.{j}" for i in range(3) for j in range(2)]
    config = MCTSConfig(budget=25, lam=lam, early_stop=False, expand_rollout=True)
    search = HyperMCTS(ToyShopEnv(1, 3, 4, fail_keys=bad), RandomPolicy(), config, 2)
    result = search.run()
    assert result.rollouts == 25 and result.failures > 0
    assert 0.0 in result.rewards
    assert not any(a.key in bad for a in result.actions)  # the answer is a completed plan
    assert search.tree is not None
    failed = [n for n in search.tree.nodes() if n.failed]
    assert failed and all(n.terminal and not n.expanded for n in failed)
    everything = [a.key for a in ToyShopEnv(1, 3, 4).decisions()]
    doomed = hypermcts(ToyShopEnv(1, 3, 4, fail_keys=everything), RandomPolicy(),
                       MCTSConfig(budget=5, lam=lam, expand_rollout=True), 0)
    assert doomed.rollouts == 5 and doomed.failures == 5 and doomed.reward == 0.0


def test_cli_runs_in_tree_rollouts() -> None:
    args = ["search", "run", "--suite", "toy", "--tasks", "2", "--rollouts", "6", "--seed", "1",
            "--methods", "hypermcts,uct", "--json"]
    on = CliRunner().invoke(app, [*args, "--expand-rollout", "--branch-on", "all"])
    assert on.exit_code == 0, on.output
    payload = json.loads(on.stdout)
    assert payload["expand_rollout"] is True and payload["branch_on"] == "all"
    assert set(payload["methods"]) == {"hypermcts", "uct"}
    off = json.loads(CliRunner().invoke(app, [*args, "--design", "commit-widen"]).stdout)
    assert off["expand_rollout"] is False and off["design"] == "commit-widen"
