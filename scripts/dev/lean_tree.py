"""Dev-only: how much of the pure-Python bookkeeping is the tree's representation? A prototype
of plain UCT in the full-path design (lam = 0, no hypergraph: what ``search.baselines.uct``
runs with the default configuration) whose nodes hold their children as parallel lists (no
``Edge`` or ``Child`` object per child, a path of (node, index) pairs) and whose walk is one
loop. It must take the same decisions as the core's UCT (checked on every task before it is
timed); then its bookkeeping is measured as ``hyperplan search bench`` measures the core's
(docs/benchmarks.md, "Today's defaults on the earlier test seeds, and the bookkeeping").

    python scripts/dev/lean_tree.py SUITE TASKS REPEAT
    python scripts/dev/lean_tree.py shopping 20 3

Run it from the pure-Python install.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace
from time import perf_counter
from typing import Any

from hyperplan.search.baselines import uct
from hyperplan.search.common import FAILED, INFO, SearchBase, SearchResult
from hyperplan.search.env import Action, SearchEnv
from hyperplan.search.mcts import MCTSConfig
from hyperplan.search.policies import Policy, make_policy
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed


class LeanNode:
    """A history with its children as parallel lists: actions, recorded flags, N(h, a),
    W(h, a) and the child nodes (None until entered)."""

    __slots__ = ("acts", "cn", "cw", "depth", "expanded", "failed", "kids", "n", "rec",
                 "scores", "snapshot", "terminal")

    def __init__(self, depth: int, snapshot: Any = None) -> None:
        self.depth = depth
        self.snapshot = snapshot
        self.n = 0
        self.terminal = False
        self.failed = False
        self.expanded = False
        self.acts: list[Action] = []
        self.rec: list[bool] = []
        self.cn: list[int] = []
        self.cw: list[float] = []
        self.kids: list[LeanNode | None] = []
        self.scores: dict[str, float] | None = None


def _uct_index(node: LeanNode, c: float) -> int:
    """search.selection.uct_argmax over the node's lists."""
    log_n = math.log(node.n) if node.n > 0 else 0.0
    best, best_score = 0, -math.inf
    cw = node.cw
    for i, n in enumerate(node.cn):
        if n == 0:
            return i
        score = cw[i] / n + c * math.sqrt(log_n / n)
        if score > best_score:
            best, best_score = i, score
    return best


def _recorded_first(node: LeanNode) -> list[int]:
    """mcts._recorded_first over indices: ending children wait while a recorded one is left."""
    rec, acts = node.rec, node.acts
    idx = list(range(len(acts)))
    if all(rec[i] or acts[i].kind is INFO for i in idx) or not any(rec):
        return idx
    return [i for i in idx if rec[i] or acts[i].kind is INFO]


class LeanUCT(SearchBase):
    """The prototype (module doc)."""

    method = "lean-uct"

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0) -> None:
        super().__init__(env, policy, config, seed)
        self._at: LeanNode | None = None

    def _goto(self, node: LeanNode) -> None:
        if self._at is not node:
            self.env.restore(node.snapshot)
            self._at = node

    def _expand(self, node: LeanNode) -> None:
        self._goto(node)
        decisions = self.env.valid_decisions()
        if decisions:
            proposed, scores = self._propose_scored(decisions, self.config.branching)
            if proposed:
                raw = self.env.raw
                t = perf_counter()  # the recorded flags, timed as environment time
                rec = [raw.recorded(a) for a in proposed]
                self.env.seconds += perf_counter() - t
                k = len(proposed)
                node.acts, node.rec, node.scores = proposed, rec, scores
                node.cn, node.cw, node.kids = [0] * k, [0.0] * k, [None] * k
        node.expanded = True
        if not node.acts:
            node.terminal = True

    def _pick_new(self, node: LeanNode) -> int:
        among = _recorded_first(node) if self.config.ending_last else list(range(len(node.acts)))
        if len(among) == 1:
            return among[0]
        scores, acts = node.scores, node.acts
        if scores is not None:
            known = [scores.get(acts[i].key) for i in among]
            if None not in known:
                return among[self.policy.choose(known, self.rng)]  # type: ignore[arg-type]
        self._goto(node)
        key = self.policy.rollout(self.env, [acts[i] for i in among], self.rng).key
        return next(i for i in among if acts[i].key == key)

    def _enter(self, node: LeanNode, i: int) -> LeanNode:
        kid = node.kids[i]
        if kid is None:
            kid = node.kids[i] = LeanNode(node.depth + 1)
        if kid.snapshot is None and not kid.failed:
            self._goto(node)
            reached = self.env.advance(node.acts[i], kid.depth >= self.horizon)
            if reached is None:
                kid.failed = kid.terminal = True
                self._at = None
            else:
                kid.snapshot, kid.terminal = reached
                self._at = kid
        return kid

    def iterate(self, root: LeanNode) -> None:
        c = self.config.c
        nodes: list[LeanNode] = []
        picks: list[int] = []
        node = root
        while node.expanded and not node.terminal:  # selection
            i = 0 if len(node.acts) == 1 else _uct_index(node, c)
            nodes.append(node)
            picks.append(i)
            node = self._enter(node, i)
        while not node.terminal:  # the rollout inside the tree
            expanded = node.expanded
            if not expanded:
                self._expand(node)
                if node.terminal:
                    break
            if len(node.acts) == 1:
                i = 0
            elif expanded:
                i = _uct_index(node, c)
            else:
                i = self._pick_new(node)
            nodes.append(node)
            picks.append(i)
            node = self._enter(node, i)
        if node.failed:
            self.failures += 1
            verdict = FAILED
        else:
            self._goto(node)
            try:
                verdict = self.env.verify()
            except Exception:
                self.failures += 1
                verdict = FAILED
            self._at = None
        reward = verdict.reward
        root.n += 1
        for parent, i in zip(nodes, picks, strict=True):
            parent.cn[i] += 1
            parent.cw[i] += reward
            kid = parent.kids[i]
            assert kid is not None
            kid.n += 1
        self.record([p.acts[i] for p, i in zip(nodes, picks, strict=True)], verdict)

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        root = LeanNode(0, self.env.snapshot())
        self._at = root
        while not self.exhausted:
            self.iterate(root)
        return self.result(started)


def main(suite: str, tasks: int, repeat: int) -> None:
    envs = load_tasks(suite, tasks, 1)
    config = replace(MCTSConfig(), budget=32, branching=3, lam=0.0, hypergraph=False,
                     early_stop=True, trace=True)
    seeds = [task_seed(1, i) for i in range(tasks)]
    for env, seed in zip(envs, seeds, strict=True):  # the same decisions first
        core = uct(env, make_policy("heuristic"), config, seed)
        lean = LeanUCT(env, make_policy("heuristic"), config, seed).run()
        if core.trace != lean.trace or core.rewards != lean.rewards:
            raise SystemExit(f"the prototype took other decisions than the core's UCT ({seed})")
    figures: dict[str, list[float]] = {"core uct": [], "lean uct": []}
    for env, seed in zip(envs, seeds, strict=True):
        figures["core uct"].append(min(
            uct(env, make_policy("heuristic"), config, seed).us_per_iter for _ in range(repeat)))
        figures["lean uct"].append(min(
            LeanUCT(env, make_policy("heuristic"), config, seed).run().us_per_iter
            for _ in range(repeat)))
    print(f"{suite}: {tasks} tasks, the same decisions; bookkeeping us/iteration (median, mean)")
    for name, values in figures.items():
        print(f"  {name:9s} {statistics.median(values):7.1f} {statistics.fmean(values):7.1f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
