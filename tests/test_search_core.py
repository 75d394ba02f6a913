"""HyperMCTS core (issue 5): tree, hypergraph, HyperUCT search, baselines, policies, CLI."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
from hyperplan.search.baselines import beam, best_of_n, greedy, uct
from hyperplan.search.env import Action, ActionKind, Objective, SearchEnv, Verdict
from hyperplan.search.llm_policy import LLMPolicy
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, TreeDesign, design_config, hypermcts
from hyperplan.search.parts.prior_guided import PriorGuided
from hyperplan.search.policies import HeuristicPolicy, Policy, RandomPolicy
from hyperplan.search.trajectory_hypergraph import (
    AGGREGATORS,
    GLOBAL,
    Observation,
    TrajectoryHypergraph,
    extract,
)
from hyperplan.search.tree import HistoryTree, TreeError
from hyperplan_bench.eval.treesearch import runner as search_runner
from hyperplan_bench.eval.treesearch.bench import bench_bookkeeping
from hyperplan_bench.eval.treesearch.runner import paired_diff, wilson
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv, make_toy_tasks
from search_reference import RefNode, ref_backup, ref_children, ref_descend


def commit_widen(**fields: Any) -> MCTSConfig:
    """These tests pin Algorithm 1 in the commit-widen design (the default until 2026-12-03,
    :class:`~hyperplan.search.mcts.TreeDesign`); the full-path default has its own tests
    (``tests/test_search_design.py``)."""
    return design_config(TreeDesign.COMMIT_WIDEN, **fields)

# --------------------------------------------------------------------------------------------
# a reference UCT, written independently of mcts.py (replays actions instead of snapshots)


def reference_uct(
    env: SearchEnv, policy: Policy, budget: int, b: int, c: float, seed: int,
    branch_on: str = "all", widen: float = 0.0,
) -> list[tuple[str, ...]]:
    rng = random.Random(seed)
    root = RefNode(None, 0)
    traces: list[tuple[str, ...]] = []
    horizon = env.horizon
    for _ in range(budget):
        env.reset()
        node, path, keys = ref_descend(env, policy, root, widen, c, rng)
        while node.children is None and node.depth < horizon and not env.is_terminal():
            decisions = env.decisions()
            if not decisions:
                break
            proposed = ref_children(env, policy, decisions, b, rng, branch_on)
            node.children = [RefNode(a, node.depth + 1) for a in proposed]
            child = node.children[0]
            assert child.action is not None
            env.step(child.action)
            keys.append(child.action.key)
            path.append(child)
            node = child
            # information chain: keep expanding below a single information child
            if not (branch_on == "commit" and len(proposed) == 1
                    and child.action.kind is ActionKind.INFO):
                break
        depth = node.depth
        while depth < horizon and not env.is_terminal():
            decisions = env.decisions()
            if not decisions:
                break
            action = policy.rollout(env, decisions, rng)
            env.step(action)
            keys.append(action.key)
            depth += 1
        ref_backup(root, path, env.verify().reward)
        traces.append(tuple(keys))
    return traces


@pytest.mark.parametrize("widen", [0.0, 0.25])
@pytest.mark.parametrize("seed", [3, 11])
def test_lambda_zero_equals_uct_decision_for_decision(seed: int, widen: float) -> None:
    """lam = 0 is UCT decision for decision: as in Algorithm 1 (widen = 0) and with
    progressive widening, which at lam = 0 follows the policy order only."""
    config = commit_widen(budget=60, branching=3, c=0.8, lam=0.0, early_stop=False, trace=True,
                        widen=widen)
    assert config.branch_on == "commit"  # the default; no information actions in this toy
    ref = reference_uct(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), 60, 3, 0.8, seed,
                        widen=widen)
    if widen:
        assert ref != reference_uct(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), 60, 3, 0.8, seed)
    hyper0 = HyperMCTS(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), config, seed).run()
    guided0 = HyperMCTS(ToyShopEnv(seed, 4, 5), HeuristicPolicy(),
                        replace(config, rollout_guidance=True), seed).run()
    assert guided0.trace == ref  # lam = 0 disables every use of the hypergraph
    plain = uct(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), config, seed)
    assert hyper0.trace == ref
    assert plain.trace == ref
    assert plain.method == "uct" and hyper0.method == "hypermcts"


@pytest.mark.parametrize("widen", [0.0, 0.25])
@pytest.mark.parametrize("branch_on", ["commit", "all"])
@pytest.mark.parametrize("seed", [3, 11])
def test_lambda_zero_equals_uct_with_information_actions(
    seed: int, branch_on: str, widen: float
) -> None:
    """With information actions (where "commit" and "all" differ), lam = 0 is still UCT
    decision for decision, against a reference that branches at decision points itself."""
    config = commit_widen(budget=60, branching=3, c=0.8, lam=0.0, early_stop=False, trace=True,
                        branch_on=branch_on, widen=widen)
    policy = HeuristicPolicy(temperature=0.5)
    ref = reference_uct(ToyShopEnv(seed, 4, 5, info=True), policy, 60, 3, 0.8, seed,
                        branch_on=branch_on, widen=widen)
    hyper0 = HyperMCTS(ToyShopEnv(seed, 4, 5, info=True), policy, config, seed).run()
    plain = uct(ToyShopEnv(seed, 4, 5, info=True), policy, config, seed)
    guided0 = HyperMCTS(ToyShopEnv(seed, 4, 5, info=True), policy,
                        replace(config, rollout_guidance=True), seed).run()
    assert hyper0.trace == ref
    assert plain.trace == ref
    assert guided0.trace == ref
    if branch_on == "commit":  # the two modes really search differently here
        other = reference_uct(ToyShopEnv(seed, 4, 5, info=True), policy, 60, 3, 0.8, seed,
                              widen=widen)
        assert other != ref


def test_positive_lambda_changes_decisions_somewhere() -> None:
    differs = 0
    for seed in range(6):
        cfg = commit_widen(budget=40, lam=1.0, early_stop=False, trace=True)
        a = hypermcts(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), cfg, seed)
        b = uct(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), cfg, seed)
        differs += a.trace != b.trace
    assert differs > 0


# --------------------------------------------------------------------------------------------
# hypergraph

G = [Objective("g1", "local"), Objective("g2", "budget", scope="global")]


def _two_rollouts(agg: str = "balanced") -> TrajectoryHypergraph:
    hg = TrajectoryHypergraph(agg)
    hg.update(extract(["A1", "B1", "C1"],
                      Verdict(0.6, False, {"g1": 1.0}, {"g1": frozenset({"A1"})}), G))
    hg.update(extract(["B1", "A1", "C1"],
                      Verdict(0.9, False, {"g1": 0.0, "g2": 0.5}, {"g1": frozenset({"A1"})}), G))
    return hg


def test_extractor_observations() -> None:
    obs = extract(["A1", "B1", "C1"],
                  Verdict(0.6, False, {"g1": 1.0}, {"g1": frozenset({"A1"})}), G)
    abc = frozenset({"A1", "B1", "C1"})
    assert obs == [Observation(abc, GLOBAL, 0.6), Observation(frozenset({"A1"}), "g1", 1.0),
                   Observation(abc, "g2", 0.6)]  # g2: no rho_g -> R, no subset -> C(tau)
    # one recorded decision: no trajectory-level edge; scores clipped into [0, 1]
    single = extract(["A1"], Verdict(1.5, True, {"g1": -2.0}), G)
    assert [(o.label, o.score) for o in single] == [("g1", 0.0), ("g2", 1.0)]
    assert extract([], Verdict(1.0, True), G) == []


def test_hyperedge_statistics_after_known_rollouts() -> None:
    hg = _two_rollouts()
    abc = {"A1", "B1", "C1"}
    glob, g1, g2 = hg.edge(abc, GLOBAL), hg.edge({"A1"}, "g1"), hg.edge(abc, "g2")
    assert glob is not None and g1 is not None and g2 is not None
    assert (glob.n, glob.mean) == (2, pytest.approx(0.75))
    assert (g1.n, g1.mean) == (2, pytest.approx(0.5))
    assert (g2.n, g2.mean) == (2, pytest.approx(0.55))
    assert len(hg.edges) == 3
    assert sorted(k[1] for k in hg.incident("A1")) == ["g1", "g2", GLOBAL]
    assert sorted(k[1] for k in hg.incident("B1")) == ["g2", GLOBAL]


@pytest.mark.parametrize(
    ("agg", "a1", "b1"),
    [
        ("balanced", (0.5 + 0.55) / 2 / 2 + 0.75 / 2, (0.55 + 0.75) / 2),
        ("min", 0.5, 0.55),
        ("max", 0.75, 0.75),
        ("pooled", (0.6 + 0.9 + 1.0 + 0.0 + 0.6 + 0.5) / 6, (0.6 + 0.9 + 0.6 + 0.5) / 4),
    ],
)
def test_aggregators_hand_computed(agg: str, a1: float, b1: float) -> None:
    hg = _two_rollouts(agg)
    assert hg.prior("A1") == pytest.approx(a1)
    assert hg.prior("B1") == pytest.approx(b1)
    assert hg.prior("Z9") == 0.0  # unseen decision
    hg.update([Observation(frozenset({"A1"}), "g1", 1.0)])  # cache invalidated on update
    assert hg.prior("A1") != pytest.approx(a1) or agg == "max"


def test_prior_zero_for_unseen_and_bounded() -> None:
    hg = TrajectoryHypergraph()
    assert hg.prior("anything") == 0.0
    rng = random.Random(0)
    rollouts = []
    for _ in range(200):
        decisions = rng.sample(["a", "b", "c", "d", "e"], rng.randint(1, 4))
        rollouts.append(extract(decisions, Verdict(rng.random(), False,
                                                   {"g1": rng.random()}), G))
    for agg in AGGREGATORS:
        hg2 = TrajectoryHypergraph(agg)
        for observations in rollouts:
            hg2.update(observations)
        assert all(0.0 < hg2.prior(v) <= 1.0 for v in "abcde")
        assert hg2.prior("z") == 0.0
    with pytest.raises(ValueError, match="unknown aggregator"):
        TrajectoryHypergraph("median")


def test_order_invariant_pooling_while_tree_keeps_both_histories() -> None:
    env = ToyShopEnv(0, 3, 1)  # one product per item: A1, B1, C1 in any order
    search = HyperMCTS(env, RandomPolicy(), commit_widen(budget=40, early_stop=False), 5)
    result = search.run()
    assert search.tree is not None and search.hypergraph is not None
    leaves = {h for h in search.tree.histories() if len(h) == 3}
    assert ("P0.0", "P1.0", "P2.0") in leaves and ("P1.0", "P0.0", "P2.0") in leaves
    assert len(leaves) == 6  # every order is its own history
    edge = search.hypergraph.edge({"P0.0", "P1.0", "P2.0"}, GLOBAL)
    assert edge is not None and edge.n == result.rollouts == 40  # one pooled hyperedge


# --------------------------------------------------------------------------------------------
# tree and search mechanics


def _replay(env: ToyShopEnv, keys: Sequence[str]) -> Any:
    env.reset()
    for key in keys:
        env.step(next(a for a in env.decisions() if a.key == key))
    return env.snapshot()


def test_restore_returns_the_exact_state() -> None:
    env = ToyShopEnv(2, 3, 4, info=True)
    search = HyperMCTS(env, HeuristicPolicy(), commit_widen(budget=50, early_stop=False), 1)
    search.run()
    assert search.tree is not None
    stack: list[tuple[Any, tuple[str, ...]]] = [(search.tree.root, ())]
    checked = 0
    while stack:
        node, keys = stack.pop()
        if node.snapshot is not None:
            env.restore(node.snapshot)
            state, described = env.snapshot(), env.describe()
            decisions = [a.key for a in env.decisions()]
            assert state == _replay(env, keys)
            assert described == env.describe()
            assert decisions == [a.key for a in env.decisions()]
            checked += 1
        stack.extend((e.child, (*keys, e.action.key)) for e in node.edges)
    assert checked > 10


class CountingPolicy:
    """Wraps a policy and records the history at which each proposal was asked."""

    name = "counting"

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.proposals: list[Any] = []

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        self.proposals.append(env.snapshot())
        return self.inner.propose(env, decisions, k, rng)

    def rollout(self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random) -> Action:
        return self.inner.rollout(env, decisions, rng)


def test_expansion_at_most_once_with_b_distinct_children() -> None:
    policy = CountingPolicy(HeuristicPolicy(temperature=0.5))
    config = commit_widen(budget=80, branching=2, early_stop=False, rollout_guidance=False,
                        widen=0.0)  # Algorithm 1: no progressive widening
    search = HyperMCTS(ToyShopEnv(4, 4, 5), policy, config, 0)
    search.run()
    assert search.tree is not None
    assert len(policy.proposals) == len(set(policy.proposals))  # each history expanded once
    expanded = [n for n in search.tree.nodes() if n.expanded]
    assert len(expanded) == len(policy.proposals)
    for node in expanded:
        keys = [e.action.key for e in node.edges]
        assert 1 <= len(keys) <= 2 and len(set(keys)) == len(keys)
        with pytest.raises(TreeError):
            node.expand([], 2)
    tree = HistoryTree(None, 2)
    a = Action("a")
    with pytest.raises(TreeError, match="duplicate"):
        tree.root.expand([(a, "a", True), (a, "a", True)], 2)
    with pytest.raises(TreeError, match="branching"):
        HistoryTree(None, 1).root.expand([(Action("x"), "x", True), (a, "a", True)], 1)


def test_early_stop_on_verified_perfect_reward() -> None:
    easy = ToyShopEnv(0, 3, 1)  # every complete plan is valid and within budget
    stopped = hypermcts(easy, RandomPolicy(), commit_widen(budget=30), 0)
    assert stopped.rollouts == 1 and stopped.stopped_early and stopped.success
    full = hypermcts(easy, RandomPolicy(), commit_widen(budget=30, early_stop=False), 0)
    assert full.rollouts == 30 and not full.stopped_early


def test_failed_rollouts_recorded_not_fatal() -> None:
    bad = [f"P{i}.{j}" for i in range(3) for j in range(2)]
    env = ToyShopEnv(1, 3, 4, fail_keys=bad)
    result = hypermcts(env, RandomPolicy(), commit_widen(budget=25, early_stop=False), 2)
    assert result.rollouts == 25 and result.failures > 0
    assert 0.0 in result.rewards
    assert not any(a.key in bad for a in result.actions)  # the answer is a completed plan
    everything = [a.key for a in ToyShopEnv(1, 3, 4).decisions()]
    doomed = hypermcts(ToyShopEnv(1, 3, 4, fail_keys=everything), RandomPolicy(),
                       commit_widen(budget=5), 0)
    assert doomed.rollouts == 5 and doomed.failures == 5 and doomed.reward == 0.0
    for method in (uct, best_of_n, greedy, beam):
        r = method(ToyShopEnv(1, 3, 4, fail_keys=bad), RandomPolicy(), commit_widen(budget=12), 0)
        assert r.rollouts <= 12


@pytest.mark.parametrize("method", [hypermcts, uct, best_of_n, greedy, beam])
def test_budget_respected_and_baselines_run(method: Any) -> None:
    for seed in range(3):
        config = commit_widen(budget=17, branching=3, early_stop=False)
        result = method(ToyShopEnv(seed, 4, 5), HeuristicPolicy(), config, seed)
        assert 1 <= result.rollouts <= 17
        assert len(result.actions) == 4 and isinstance(result.verdict, Verdict)
        assert result.reward == max(result.rewards)
        assert result.timing.total >= result.timing.policy + result.timing.env - 1e-9
        if method in (hypermcts, uct, best_of_n):
            assert result.rollouts == 17
        if method is greedy:
            assert result.rollouts == 1


def test_search_beats_single_rollout_on_toy() -> None:
    envs = make_toy_tasks(30, 7, 1)
    config = commit_widen(budget=32)
    searched = sum(hypermcts(e, HeuristicPolicy(), config, i).reward for i, e in enumerate(envs))
    single = sum(greedy(e, HeuristicPolicy(), config, i).reward for i, e in enumerate(envs))
    assert searched > single


# --------------------------------------------------------------------------------------------
# policies


def test_heuristic_policy_is_seeded_and_distinct() -> None:
    env = ToyShopEnv(0, 3, 6)
    decisions = env.decisions()
    p = HeuristicPolicy(temperature=0.2)
    a = p.propose(env, decisions, 4, random.Random(1))
    assert a == p.propose(env, decisions, 4, random.Random(1))
    assert len({x.key for x in a}) == 4
    top = HeuristicPolicy(temperature=0.0).propose(env, decisions, 3, random.Random(0))
    hints = sorted((env.hint(x) for x in decisions), reverse=True)[:3]
    assert [env.hint(x) for x in top] == hints
    assert RandomPolicy().propose(env, decisions, 100, random.Random(0)) != []


def test_llm_policy_with_scripted_double() -> None:
    env = ToyShopEnv(0, 2, 3)
    reply = {"candidates": [{"key": "P1.2", "score": 0.9}, {"key": "bogus", "score": 1.0},
                            {"key": "P0.0", "score": 0.5}, {"key": "P1.2", "score": 0.1}]}
    llm = ScriptedLLM([ScriptedRule(json=reply, component="mcts-policy")])
    policy = LLMPolicy(llm, rollout_policy=RandomPolicy())
    proposed = policy.propose(env, env.decisions(), 2, random.Random(0))
    assert [a.key for a in proposed] == ["P1.2", "P0.0"]
    assert llm.calls[0].schema is not None
    assert "Valid decisions" in llm.calls[0].messages[-1].content
    policy.propose(env, env.decisions(), 2, random.Random(0))
    assert policy.calls == 1  # cached per history
    result = hypermcts(env, policy, commit_widen(budget=10, branching=2), 0)
    assert result.rollouts >= 1 and len(result.actions) == 2
    # the model's pick shapes the tree: the root's first child is its best valid key
    search = HyperMCTS(env, LLMPolicy(ScriptedLLM([ScriptedRule(json=reply)])), commit_widen(
        budget=4, branching=2, early_stop=False, trace=True), 0)
    search.run()
    assert search.trace[0][0] == "P1.2"
    # a failing model falls back to uniform choices instead of stopping the search
    broken = LLMPolicy(ScriptedLLM([]))
    env.reset()
    assert len(broken.propose(env, env.decisions(), 2, random.Random(0))) == 2
    assert broken.rollout(env, env.decisions(), random.Random(0)) in env.decisions()


# --------------------------------------------------------------------------------------------
# runner, CLI, bench


def test_intervals() -> None:
    lo, hi = wilson(5, 10)
    assert 0 <= lo < 0.5 < hi <= 1
    assert wilson(0, 0) == (0.0, 0.0)
    d = paired_diff([1, 1, 0, 1], [0, 1, 0, 0])
    assert d["diff"] == pytest.approx(0.5) and d["ci95"][0] < 0.5 < d["ci95"][1]
    assert d["wins"] == 2 and d["losses"] == 0


def test_cli_json_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_tasks(suite: str, n: int, seed: int, level: int | None = None) -> list[SearchEnv]:
        assert suite == "shopping"
        return list(make_toy_tasks(n, seed, level))

    monkeypatch.setattr(search_runner, "load_tasks", fake_tasks)
    monkeypatch.setattr("hyperplan_bench.cli.search_cmds.load_tasks", fake_tasks)
    result = CliRunner().invoke(app, ["search", "run", "--suite", "shopping", "--tasks", "4",
                                      "--seed", "1000", "--rollouts", "8", "--branching", "2",
                                      "--lam", "0.5", "--level", "1", "--agg", "min", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"suite", "n_tasks", "budget", "branching", "methods", "seconds", "paired"} <= set(data)
    assert data["suite"] == "shopping" and data["n_tasks"] == 4 and data["budget"] == 8
    assert set(data["methods"]) == {"hypermcts", "uct", "best_of_n", "greedy", "beam", "lats"}
    for stats in data["methods"].values():
        assert {"case_acc", "ci95", "score", "rollouts", "us_per_iter"} <= set(stats)
        assert 0 <= stats["ci95"][0] <= stats["case_acc"] <= stats["ci95"][1] <= 1
        assert stats["rollouts"] <= 8
    assert data["methods"]["greedy"]["rollouts"] == 1
    assert {"diff", "ci95"} <= set(data["paired"]["hypermcts_minus_uct"])
    bad = CliRunner().invoke(app, ["search", "run", "--suite", "toy", "--agg", "nope", "--json"])
    assert bad.exit_code != 0


def test_cli_sweep_table_and_plot(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["search", "sweep", "--suite", "toy", "--tasks", "3",
                                      "--rollouts", "4,8", "--lams", "0,0.5", "--level", "1",
                                      "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| budget | λ=0 | λ=0.5 | best-of-N |" in result.stdout
    assert "| 8 |" in result.stdout
    assert (tmp_path / "mcts_sweep_toy.png").stat().st_size > 1000


def test_bench_bookkeeping_reports_microseconds() -> None:
    out = bench_bookkeeping(tasks=2, budget=32)
    for name in ("hypermcts", "uct"):
        assert 0 < out[name]["us_per_iter_median"] < 10_000


@pytest.mark.parametrize("tiebreak", [True, False])
def test_unvisited_children_ordered_by_prior(tiebreak: bool) -> None:
    env = ToyShopEnv(0, 2, 5)
    policy = HeuristicPolicy(temperature=0.0)
    proposals = policy.propose(env, env.decisions(), 3, random.Random(0))
    favourite = proposals[2].key
    config = commit_widen(budget=1, lam=1.0, trace=True, prior_tiebreak=tiebreak)
    search = HyperMCTS(env, policy, config, 0)
    assert search.hypergraph is not None
    search.hypergraph.update([Observation(frozenset({favourite}), "item0", 1.0)])
    search.run()
    assert search.trace[0][0] == (favourite if tiebreak else proposals[0].key)


@pytest.mark.parametrize(("mode", "info_value"), [("neutral", 0.4), ("zero", 0.0)])
def test_information_actions_get_a_neutral_prior(mode: str, info_value: float) -> None:
    search = HyperMCTS(ToyShopEnv(0, 2, 3, info=True), RandomPolicy(),
                       commit_widen(lam=1.0, info_prior=mode), 0)
    assert search.hypergraph is not None
    search.hypergraph.update([Observation(frozenset({"P0.0"}), "item0", 0.8)])
    node = HistoryTree(None, 3).root
    node.expand([(Action("inspect0", ActionKind.INFO), "inspect0", False),
                 (Action("P0.0"), "P0.0", True), (Action("P0.1"), "P0.1", True)], 3)
    assert search.priors(node) == pytest.approx([info_value, 0.8, 0.0])


def test_rollout_guidance_prefers_high_prior_candidates() -> None:
    env = ToyShopEnv(0, 2, 5)
    policy = HeuristicPolicy(temperature=0.0)
    proposals = policy.propose(env, env.decisions(), 3, random.Random(0))
    config = commit_widen(budget=8, lam=0.5, rollout_guidance=True)
    search = HyperMCTS(env, policy, config, 0)
    assert search.hypergraph is not None
    assert PriorGuided().choose(search, None, env.decisions()) is None  # empty: inactive
    search.hypergraph.update([Observation(frozenset({proposals[1].key}), "item0", 0.9)])
    assert search.choose(None, env.decisions()).key == proposals[1].key
    result = search.run()
    assert result.rollouts <= 8


class InfoFirstPolicy:
    """Proposes information actions first (decision order), then commits; ``mix`` puts one
    commit first and the information actions after it (to exercise the top-up)."""

    name = "info-first"

    def __init__(self, mix: bool = False) -> None:
        self.mix = mix

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        info = [a for a in decisions if a.kind is ActionKind.INFO]
        commits = [a for a in decisions if a.kind is ActionKind.COMMIT]
        ranked = [*commits[:1], *info, *commits[1:]] if self.mix else [*info, *commits]
        return ranked[:k]

    def rollout(self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random) -> Action:
        return self.propose(env, decisions, 1, rng)[0]


@pytest.mark.parametrize("chain", [True, False])
def test_branching_at_decision_points(chain: bool) -> None:
    """branch_on="commit": a history whose top proposal is information gathering gets exactly
    one (information) child; commit decision points get up to b distinct commit children."""
    config = commit_widen(budget=40, branching=3, early_stop=False, info_chain=chain,
                        widen=0.0)  # Algorithm 1: no progressive widening
    search = HyperMCTS(ToyShopEnv(2, 3, 4, info=True), InfoFirstPolicy(), config, 0)
    search.run()
    assert search.tree is not None
    expanded = [n for n in search.tree.nodes() if n.expanded]
    info_nodes = [n for n in expanded if n.edges[0].action.kind is ActionKind.INFO]
    commit_nodes = [n for n in expanded if n.edges[0].action.kind is ActionKind.COMMIT]
    assert info_nodes and commit_nodes
    for node in info_nodes:
        assert len(node.edges) == 1  # no branching on information steps
    for node in commit_nodes:
        kinds = {e.action.kind for e in node.edges}
        assert kinds == {ActionKind.COMMIT}
        assert 1 <= len(node.edges) <= 3 and len({e.action.key for e in node.edges}) == len(
            node.edges)
    assert max(len(n.edges) for n in commit_nodes) == 3
    # the root's information steps stay in every history (inspect0, inspect1, inspect2 first)
    for trace_keys in search.tree.histories():
        assert list(trace_keys[:3]) == ["inspect0", "inspect1", "inspect2"][: len(trace_keys)]
    # "all" branches on information steps too
    wide = HyperMCTS(ToyShopEnv(2, 3, 4, info=True), InfoFirstPolicy(),
                     replace(config, branch_on="all"), 0)
    wide.run()
    assert wide.tree is not None
    assert len(wide.tree.root.edges) == 3
    assert [e.action.kind for e in wide.tree.root.edges] == [ActionKind.INFO] * 3


def test_information_chain_costs_no_rollout() -> None:
    """With info_chain the first iteration expands through the information steps to the first
    commit point; without it each information node takes an iteration of its own."""
    env = ToyShopEnv(2, 3, 4, info=True)
    chained = HyperMCTS(env, InfoFirstPolicy(), commit_widen(budget=1, early_stop=False), 0)
    chained.run()
    assert chained.tree is not None
    assert len([n for n in chained.tree.nodes() if n.expanded]) == 4  # 3 inspects + 1 commit
    single = HyperMCTS(ToyShopEnv(2, 3, 4, info=True), InfoFirstPolicy(),
                       commit_widen(budget=1, early_stop=False, info_chain=False), 0)
    single.run()
    assert single.tree is not None
    assert len([n for n in single.tree.nodes() if n.expanded]) == 1


def test_commit_point_tops_up_dropped_information_proposals() -> None:
    """Top proposal a commit, followed by information proposals: the information ones are
    dropped and the children topped up from the remaining commits, b in all."""
    env = ToyShopEnv(2, 3, 4, info=True)
    search = HyperMCTS(env, InfoFirstPolicy(mix=True), commit_widen(budget=1), 0)
    children = search._children(env.decisions(), 3)
    assert [a.kind for a in children] == [ActionKind.COMMIT] * 3
    assert len({a.key for a in children}) == 3
    assert children[0].key == InfoFirstPolicy(mix=True).propose(
        env, env.decisions(), 1, random.Random(0))[0].key
    with pytest.raises(ValueError, match="branch_on"):
        commit_widen(branch_on="sometimes")
