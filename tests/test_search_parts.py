"""HyperMCTS as Algorithm 1 plus named parts (hyperplan.search.parts): the designs the
configuration switches name are the part values written out, a design given directly replaces
them (experiments are new parts, not subclasses), and the search package keeps its functions
and classes small."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from hyperplan.search.env import Action, Verdict
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, TreeDesign, design_config
from hyperplan.search.parts.base import (
    ChildFilter,
    Design,
    Mark,
    Observer,
    PriorRule,
    RolloutChooser,
    reads,
)
from hyperplan.search.parts.designs import COMMIT_WIDEN, FULL_PATH, PAPER, design_of
from hyperplan.search.parts.ending_last import EndingLast
from hyperplan.search.parts.pruning import EvidencePruning
from hyperplan.search.policies import make_policy
from hyperplan.search.selection import graph_priors
from hyperplan.search.tree import Edge, Node
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed

SEARCH = Path(__file__).resolve().parents[1] / "src" / "hyperplan" / "search"


@pytest.mark.parametrize(("name", "design"), [(TreeDesign.FULL_PATH, FULL_PATH),
                                              (TreeDesign.PAPER, PAPER),
                                              (TreeDesign.COMMIT_WIDEN, COMMIT_WIDEN)])
def test_each_named_design_is_its_parts(name: TreeDesign, design: Design) -> None:
    assert design_of(design_config(name)) == design
    assert design_of(MCTSConfig()) == FULL_PATH


def test_lambda_zero_keeps_only_the_parts_that_read_no_hypergraph() -> None:
    uct = design_of(MCTSConfig(lam=0.0, hypergraph=False))
    assert uct.rollout_filters == (EndingLast(),) and not uct.select_filters
    assert not uct.wideners and uct.composer is None and reads(uct) == frozenset()
    assert reads(FULL_PATH) == {Mark.VERIFIED, Mark.REFUTED, Mark.FREE}
    assert reads(PAPER) == frozenset()


def _run(design: Design | None, config: MCTSConfig) -> HyperMCTS:
    env = load_tasks("shopping", 1, 5)[0]
    search = HyperMCTS(env, make_policy("heuristic"), config, task_seed(5, 0), design=design)
    search.run()
    return search


def test_a_design_given_directly_is_the_one_searched() -> None:
    config = MCTSConfig(budget=16, early_stop=False, trace=True)
    same = _run(FULL_PATH, config)
    assert same.trace == _run(None, config).trace
    paper = _run(PAPER, config)  # the paper's parts under the default switches
    assert paper.trace == _run(None, design_config(TreeDesign.PAPER, budget=16,
                                                   early_stop=False, trace=True)).trace
    assert paper.trace != same.trace


@dataclass(frozen=True)
class NoCoupons(ChildFilter):
    """An experiment's child filter: coupons wait while anything else is left."""


    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        rest = [e for e in edges if not e.action.key.startswith("coupon:")]
        return rest or edges


@dataclass(frozen=True)
class Counting(RolloutChooser):
    """An experiment's rollout chooser that counts its calls and passes."""

    calls: list[int]

    def choose(self, search: HyperMCTS, node: Node | None,
               actions: Sequence[Action]) -> Action | None:
        self.calls.append(len(actions))
        return None


def test_new_parts_change_the_search_without_a_subclass() -> None:
    config = MCTSConfig(budget=16, early_stop=False, trace=True)
    calls: list[int] = []
    design = FULL_PATH._replace(rollout_filters=(NoCoupons(), *FULL_PATH.rollout_filters),
                                choosers=(Counting(calls), *FULL_PATH.choosers))
    search = _run(design, config)
    assert calls and all(n > 1 for n in calls)
    assert search.tree is not None
    node, coupons = search.tree.root, 0  # the first rollout picks at new histories only
    for key in search.trace[0]:
        taken = next(e for e in node.edges if e.action.key == key)
        if key.startswith("coupon:"):
            coupons += 1
            assert all(e.action.key.startswith("coupon:") for e in node.edges)
        node = taken.child
    base = _run(None, config)
    assert search.trace != base.trace
    assert coupons < sum(k.startswith("coupon:") for k in base.trace[0]) or not coupons


@dataclass
class Seen(Observer):
    """An experiment's observer: every rollout's reward."""

    rewards: list[float]

    def observed(self, search: HyperMCTS, actions: Sequence[Action], verdict: Verdict) -> None:
        self.rewards.append(verdict.reward)


@dataclass(frozen=True)
class GraphPrior(PriorRule):
    """An experiment's prior rule that is the hypergraph's own (the search is unchanged)."""


    def priors(self, search: HyperMCTS, edges: list[Edge]) -> list[float]:
        assert search.hypergraph is not None
        return graph_priors(search.hypergraph, edges, neutral=True)


def test_observers_see_every_rollout_and_a_prior_rule_replaces_the_prior() -> None:
    config = MCTSConfig(budget=16, early_stop=False, trace=True)
    seen = Seen([])
    search = _run(FULL_PATH._replace(observers=(seen,), prior=GraphPrior()), config)
    assert seen.rewards == search.rewards and len(seen.rewards) == 16
    assert search.trace == _run(None, config).trace


def test_pruning_is_one_part_in_two_places() -> None:
    assert FULL_PATH.select_filters == (EvidencePruning(),)
    assert EvidencePruning() in FULL_PATH.rollout_filters


def _too_big(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > 60:
                out.append(f"{path.name}:{node.name} has {length} lines")
        if isinstance(node, ast.ClassDef):
            methods = [b for b in node.body
                       if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)]
            if len(methods) > 20:
                out.append(f"{path.name}:{node.name} has {len(methods)} methods")
    return out


def test_no_function_over_60_lines_and_no_class_over_20_methods_in_the_search() -> None:
    found = [msg for path in sorted(SEARCH.rglob("*.py")) for msg in _too_big(path)]
    assert not found, found
