"""The dev-seed comparisons behind the full-path tree design and the hypergraph's uses in it
(docs/benchmarks.md, "The strongest tree design"): every variant on the same generated tasks,
task seeds and heuristic policy as ``hyperplan search run`` (B = 32, b = 3, lam = 0.5,
c = 0.5), case accuracy, policy calls per case and the paired difference to the first variant
named, in points with a normal 95% interval.

    python scripts/dev/tree_designs.py SUITE SEEDS TASKS VARIANT[,VARIANT...]
    python scripts/dev/tree_designs.py shopping 11,12 100 uct,hyper,widen_only
    python scripts/dev/tree_designs.py shopping 11 100 --failures hyper

``--failures`` counts, for the failed tasks of ``hyper`` or ``uct``, whether every local
objective was met by some rollout (the failure analysis). The variants that are not
configurations are subclasses of HyperMCTS here, so run this on the pure-Python install (the
compiled core refuses interpreted subclasses). Dev seeds only (0-999).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing import Pool
from typing import Any

from hyperplan.eval.treesearch.runner import METHOD_FUNCS, load_tasks, task_seed
from hyperplan.search.common import INFO, SearchResult
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, Pick, design_config
from hyperplan.search.policies import HeuristicPolicy, Policy, _gumbel_top_k, make_policy
from hyperplan.search.tree import Edge, Node

Run = Callable[[SearchEnv, int], SearchResult]
# the full-path design without our two rules
PLAIN: dict[str, Any] = {"evidence_widening": False, "compose_every": 0}


class SortedHeuristic(HeuristicPolicy):
    """The heuristic's k draws returned sorted by hint instead of in draw order."""

    def propose(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                rng: Any) -> list[Action]:
        scores = [env.hint(a) for a in decisions]
        idx = sorted(_gumbel_top_k(scores, k, self.temperature, rng), key=lambda i: -scores[i])
        return [decisions[i] for i in idx]


class Variant(HyperMCTS):
    """HyperMCTS with the switches of the rejected variants (all off: HyperMCTS itself)."""

    select_child = False  # new in-tree children chosen by selection (first unvisited)
    eps = 0.0  # ... or uniformly at random with this probability
    fill = False  # unseen recorded decisions at the mean prior of their known siblings
    replace_last = False  # a locally verified decision replaces the b-th proposal
    boost = False  # locally verified children get +1 prior (forced first)
    compose_local = False  # composed rollouts follow local verification only
    reach = False  # composed rollouts widen with a verified decision of A_dec(h)

    _reach_on: frozenset[str] | None = None  # set during a composed walk with ``reach``

    def _walk(self, node: Node, path: list[Edge], verified_on: frozenset[str] | None) -> Node:
        if verified_on is not None and self.compose_local:
            verified_on = self._local_objectives
        self._reach_on = verified_on if self.reach else None
        try:
            return super()._walk(node, path, verified_on)
        finally:
            self._reach_on = None

    def _open(self, node: Node) -> list[Edge]:
        """With ``reach`` in a composed walk: when no child is verified, widen with a verified
        decision of A_dec(h), which the walk then takes."""
        edges = super()._open(node)
        on, hypergraph = self._reach_on, self.hypergraph
        if on is not None and edges and hypergraph is not None and not any(
                e.recorded and hypergraph.verified(e.identity, on) for e in edges):
            self._reach(node, edges, on)
        return node.edges

    def _picked(self, node: Node, edges: list[Edge], pick: Pick) -> Edge:
        """With ``select_child``, a new history's child by selection (first unvisited), or
        with probability ``eps`` a uniformly random one, instead of the rollout chooser's."""
        if not self.select_child:
            return super()._picked(node, edges, pick)
        if self.eps and self.rng.random() < self.eps:
            return edges[self.rng.randrange(len(edges))]
        return self.select(node)

    def _reach(self, node: Node, edges: list[Edge], on: frozenset[str]) -> Edge | None:
        assert self.hypergraph is not None
        self._goto(node)
        have = {e.action.key for e in edges}
        for action in self._decisions():
            if action.kind is INFO or action.key in have:
                continue
            v = self.env.recorded_ids([action])[0]
            if v is not None and self.hypergraph.verified(v, on):
                return node.widen(action, v, True)
        return None

    def priors(self, node: Node) -> list[float]:
        hg = self.hypergraph
        assert hg is not None
        if self.fill:
            values = [hg.prior(e.identity) if e.recorded and hg.known(e.identity) else -1.0
                      for e in node.edges]
            known = [v for v in values if v >= 0.0]
            mean = sum(known) / len(known) if known else 0.0
            base = [mean if v < 0.0 else v for v in values]
        else:
            base = super().priors(node)
        if not self.boost:
            return base
        return [p + (1.0 if e.recorded and hg.verified(e.identity, self._local_objectives)
                     else 0.0) for e, p in zip(node.edges, base, strict=True)]

    def _children(self, decisions: Sequence[Action], k: int) -> list[Action]:
        out = super()._children(decisions, k)
        hg = self.hypergraph
        if not (self.replace_last and self.config.lam and hg is not None and not hg.empty):
            return out
        have = {a.key for a in out}
        rest = [a for a in decisions if a.kind is not INFO and a.key not in have]
        for action, v in zip(rest, self.env.recorded_ids(rest), strict=True):
            if v is not None and hg.verified(v, self._local_objectives):
                return (out[:k - 1] if len(out) >= k else out) + [action]
        return out


def _variant(policy: Callable[[], Policy] = lambda: make_policy("heuristic"),
             plain: bool = False, **switches: Any) -> Run:
    """A Variant run: the switches that are class attributes set on a subclass, the rest
    passed to the configuration (the full-path default); ``plain`` is UCT (lam = 0, no
    hypergraph)."""
    attrs = {k: switches.pop(k) for k in list(switches) if hasattr(Variant, k)
             and not hasattr(MCTSConfig, k)}
    cls: type[Variant] = type("V", (Variant,), attrs)

    def run(env: SearchEnv, seed: int) -> SearchResult:
        config = MCTSConfig(**switches)
        if plain:
            config = replace(config, lam=0.0, hypergraph=False)
        search = cls(env, policy(), config, seed)
        return search.run()

    return run


def _method(name: str, config: MCTSConfig) -> Run:
    return lambda env, seed: METHOD_FUNCS[name](env, make_policy("heuristic"), config, seed)


VARIANTS: dict[str, Run] = {
    # plain MCTS (lam = 0)
    "uct": _method("uct", MCTSConfig()),
    "uct_commit_widen": _method("uct", design_config("commit-widen")),
    "uct_select_child": _variant(plain=True, select_child=True),
    **{f"uct_select_eps{e}": _variant(plain=True, select_child=True, eps=e)
       for e in (0.1, 0.25, 0.5)},
    "uct_select_sorted": _variant(SortedHeuristic, plain=True, select_child=True),
    "lats": _method("lats", MCTSConfig()),
    "hyper_commit_widen": _method("hypermcts", design_config("commit-widen")),
    # the hypergraph's uses in the full-path design
    "hyper": _method("hypermcts", MCTSConfig()),
    "guidance": _variant(rollout_guidance=True, **PLAIN),
    "prior_only": _variant(**PLAIN),
    "prior_fill": _variant(fill=True, **PLAIN),
    **{f"replace_last_lam{lam}": _variant(fill=True, replace_last=True, lam=lam, **PLAIN)
       for lam in (0.1, 0.25, 0.5, 1.0)},
    "widen_only": _variant(compose_every=0),
    "widen_fill": _variant(fill=True, compose_every=0),
    **{f"compose{m}_local": _variant(compose_every=m, compose_local=True) for m in (2, 4, 8)},
    **{f"compose{m}": _variant(compose_every=m) for m in (2, 3, 4, 8)},
    **{f"reach{m}": _variant(compose_every=m, reach=True) for m in (2, 3)},
    "forced_first": _variant(select_child=True, boost=True, replace_last=True, **PLAIN),
}


def _job(args: tuple[str, int, int, int, list[str]]) -> dict[str, tuple[float, int]]:
    suite, seed, n, i, names = args
    env = load_tasks(suite, n, seed)[i]
    out = {}
    for name in names:
        result = VARIANTS[name](env, task_seed(seed, i))
        out[name] = (float(result.success), result.policy_calls)
    return out


def compare(suite: str, seeds: list[int], n: int, names: list[str]) -> None:
    started = time.time()
    jobs = [(suite, s, n, i, names) for s in seeds for i in range(n)]
    with Pool(2) as pool:
        rows = pool.map(_job, jobs, chunksize=4)
    print(f"{suite} seeds {seeds}: {len(jobs)} tasks, {time.time() - started:.0f} s")
    base = names[0]
    for name in names:
        acc = statistics.fmean(r[name][0] for r in rows)
        calls = statistics.fmean(r[name][1] for r in rows)
        line = f"  {name:24s} case_acc {acc:.3f}  calls/case {calls:6.1f}"
        if name != base:
            d = [r[name][0] - r[base][0] for r in rows]
            m, h = statistics.fmean(d), 1.96 * statistics.stdev(d) / math.sqrt(len(d))
            line += (f"  {name} - {base}: {100 * m:+.1f} "
                     f"[{100 * (m - h):+.1f}, {100 * (m + h):+.1f}]")
        print(line, flush=True)


class Recording(HyperMCTS):
    """HyperMCTS keeping every evaluated verdict (``seen``)."""

    seen: list[Verdict]

    def record(self, actions: Sequence[Action], verdict: Verdict) -> None:
        self.seen.append(verdict)
        super().record(actions, verdict)


def failures(suite: str, seed: int, n: int, method: str) -> None:
    """Failed tasks of ``hyper`` (the default HyperMCTS) or ``uct``: was every local objective
    met by some rollout, and did one rollout meet them all (and break a global constraint)?"""
    config = MCTSConfig() if method == "hyper" else MCTSConfig(lam=0.0, hypergraph=False)
    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks(suite, n, seed)):
        search = Recording(env, make_policy("heuristic"), config, task_seed(seed, i))
        search.seen = []
        if search.run().success:
            counts["solved"] += 1
            continue
        local = [o.id for o in env.objectives if o.scope != "global"]
        seen = search.seen
        counts["failed"] += 1
        counts["every local objective met by some rollout"] += all(
            any(v.objective_scores.get(g, 0.0) >= 1.0 for v in seen) for g in local)
        counts["one rollout met them all"] += any(
            all(v.objective_scores.get(g, 0.0) >= 1.0 for g in local) for v in seen)
    print(suite, seed, method, dict(counts))


if __name__ == "__main__":
    if len(sys.argv) > 5 and sys.argv[4] == "--failures":
        failures(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5])
    else:
        compare(sys.argv[1], [int(s) for s in sys.argv[2].split(",")], int(sys.argv[3]),
                sys.argv[4].split(","))
