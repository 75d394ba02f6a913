"""Ending decisions last (issue 25, item 1): the rollout chooser leaves a new history's ending
children -- commits that are not recorded, such as finishing a cart or abstaining from an
answer -- for later while a recorded decision is among its children
(:func:`~hyperplan.search.parts.ending_last.recorded_first`), at every lam.

Checked on qa, where abstaining is the ending decision, by reading searches after they ran
(the compiled build refuses interpreted subclasses of HyperMCTS, so nothing here hooks the
search)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest

from hyperplan.search.baselines import uct
from hyperplan.search.env import Action, ActionKind
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, design_config
from hyperplan.search.parts.ending_last import recorded_first
from hyperplan.search.policies import make_policy
from hyperplan.search.tree import Edge, Node
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed
from search_helpers import generated_search, no_call

_ROOT = Node(None, 0)


def _edge(key: str, kind: ActionKind, recorded: bool) -> Edge:
    return Edge(Action(key, kind), key, recorded, _ROOT)


ANSWER = _edge("answer:0:x", ActionKind.COMMIT, True)
OPEN = _edge("open:d1", ActionKind.COMMIT, True)
SEARCH = _edge("search:q0", ActionKind.INFO, False)
ABSTAIN = _edge("abstain", ActionKind.COMMIT, False)


def test_ending_children_wait_while_a_recorded_one_is_left() -> None:
    assert recorded_first([ABSTAIN, ANSWER, SEARCH, OPEN]) == [ANSWER, SEARCH, OPEN]
    # without a recorded child, the ending one stays (information steps do not hold it back)
    assert recorded_first([SEARCH, ABSTAIN]) == [SEARCH, ABSTAIN]
    assert recorded_first([ABSTAIN]) == [ABSTAIN]
    # nothing to leave: the same list, not a copy
    edges = [SEARCH, ANSWER]
    assert recorded_first(edges) is edges


def _search(task: int, **overrides: Any) -> HyperMCTS:
    """HyperMCTS on one of four generated qa tasks (abstaining is their ending decision)."""
    return generated_search("qa", 4, task, **overrides)


def test_the_only_child_left_is_taken_without_asking() -> None:
    search = _search(0)
    assert no_call(search)._picked(_ROOT, [ABSTAIN, ANSWER]) is ANSWER


def _fresh_choices(search: HyperMCTS) -> list[tuple[list[Edge], Edge]]:
    """Per rollout, the histories it expanded (no earlier rollout went on from them, so their
    children were new to it), with their children and the child it took."""
    assert search.tree is not None
    out: list[tuple[list[Edge], Edge]] = []
    passed: set[tuple[str, ...]] = set()  # histories an earlier rollout went on from
    for trace in search.trace:
        node = search.tree.root
        for depth, key in enumerate(trace):
            prefix = tuple(trace[:depth])
            taken = next(e for e in node.edges if e.action.key == key)
            if prefix not in passed:
                out.append((node.edges, taken))
            node = taken.child
        passed.update(tuple(trace[:d]) for d in range(len(trace)))
    return out


@pytest.mark.parametrize("lam", [0.5, 0.0])
def test_no_new_history_ends_the_plan_while_a_recorded_child_is_there(lam: float) -> None:
    checked = 0
    for task in range(4):
        search = _search(task, lam=lam, hypergraph=lam > 0)
        for edges, taken in _fresh_choices(search):
            if any(e.recorded for e in edges) and any(
                    not e.recorded and e.action.kind is ActionKind.COMMIT for e in edges):
                checked += 1
                assert taken.recorded or taken.action.kind is ActionKind.INFO
    assert checked >= 20


def test_fewer_rollouts_abstain_with_it() -> None:
    def abstained(**overrides: Any) -> int:
        return sum(t[-1] == "abstain" for task in range(4)
                   for t in _search(task, **overrides).trace)

    assert abstained() < abstained(ending_last=False)


def test_on_in_the_full_path_design_at_every_lambda_off_in_the_others() -> None:
    assert MCTSConfig().ending_last
    assert not design_config("paper").ending_last
    assert not design_config("commit-widen").ending_last
    env = load_tasks("qa", 4, 5)[1]
    config = MCTSConfig(budget=24, early_stop=False, trace=True, lam=0.0, hypergraph=False)
    policy = make_policy("heuristic")
    on = uct(env, policy, config, task_seed(5, 1)).trace
    assert on == _search(1, lam=0.0, hypergraph=False).trace  # lam = 0 is UCT, rule and all
    off = uct(env, policy, replace(config, ending_last=False), task_seed(5, 1)).trace
    assert on != off  # UCT has it too, and it changes the search


PINNED_QA = "723aacaa0e164116c7f294ed44dd2cf2b5db9aed0f98bc07034d42444c12d2f2"
"""The default search with ending decisions last on four qa tasks (dev seed 5; its evidence
widening one wide, as then): every rollout's action keys and reward, recorded with the code
that produced the benchmarks of "Ending decisions last" (docs/benchmarks.md), in both
builds."""


def test_same_decisions_on_qa_as_benchmarked() -> None:
    out = {}
    for task in range(4):
        search = _search(task, evidence_width=1)
        out[str(task)] = {"trace": [list(t) for t in search.trace],
                          "rewards": [r.hex() for r in search.rewards]}
    digest = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()
    assert digest == PINNED_QA
