"""The dev-seed comparisons behind the full-path tree design and the hypergraph's uses in it
(docs/benchmarks.md, "The strongest tree design"): every variant on the same generated tasks,
task seeds and heuristic policy as ``hyperplan search run`` (B = 32, b = 3, lam = 0.5,
c = 0.5), case accuracy, the case score (qa's half credit for abstaining; accuracy elsewhere),
policy calls per case and the paired difference to the first variant named, in points with a
normal 95% interval. The named defaults: ``hyper`` (before the evidence pruning), ``pruned``
(before free decisions last), ``free_last`` (before ending decisions last), ``ending_last``
(the default since 2026-12-05); ``uct`` and ``uct_ending_last`` likewise.

    python scripts/dev/tree_designs.py SUITE SEEDS TASKS VARIANT[,VARIANT...]
    python scripts/dev/tree_designs.py shopping 11,12 100 uct,hyper,widen_only
    python scripts/dev/tree_designs.py shopping 11 100 --failures hyper
    python scripts/dev/tree_designs.py shopping 11 100 --gold pruned
    python scripts/dev/tree_designs.py shopping 11 100 --coupons [pruned|free_last]

``--failures`` counts, for the failed tasks of one of the named defaults, whether every
local objective was met by some rollout (the failure analysis); ``shopping SEED N --gold
METHOD`` compares the failed shopping tasks with their hidden gold plans, ``--coupons`` their
coupons with the best set for the products chosen. The variants that are not
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
# the full-path default before the evidence pruning (the base of every variant here)
BEFORE: dict[str, Any] = {"evidence_pruning": False, "free_last": False, "ending_last": False,
                          "evidence_width": 1}
# the default from free decisions last until ending decisions last (what "free_last" names)
FL: dict[str, Any] = {"ending_last": False, "evidence_width": 1}
# the full-path design without our two first rules
PLAIN: dict[str, Any] = {"evidence_widening": False, "compose_every": 0}


class SortedHeuristic(HeuristicPolicy):
    """The heuristic's k draws returned sorted by hint instead of in draw order."""

    def _draw(self, env: SearchEnv, decisions: Sequence[Action], k: int,
              rng: Any) -> tuple[list[Action], list[float]]:
        scores = [env.hint(a) for a in decisions]
        idx = sorted(_gumbel_top_k(scores, k, self.temperature, rng), key=lambda i: -scores[i])
        return [decisions[i] for i in idx], scores


def select_among(select: Callable[[Node], Edge], node: Node, keep: list[Edge]) -> Edge:
    """``select(node)`` over ``keep``, some of ``node``'s children (the only one left is taken
    as it is)."""
    if len(keep) == 1:
        return keep[0]
    full = node.edges
    node.edges = keep
    try:
        return select(node)
    finally:
        node.edges = full


class Variant(HyperMCTS):
    """HyperMCTS with the switches of the rejected variants (all off: HyperMCTS itself)."""

    select_child = False  # new in-tree children chosen by selection (first unvisited)
    eps = 0.0  # ... or uniformly at random with this probability
    fill = False  # unseen recorded decisions at the mean prior of their known siblings
    replace_last = False  # a locally verified decision replaces the b-th proposal
    boost = False  # locally verified children get +1 prior (forced first)
    compose_local = False  # composed rollouts follow local verification only
    reach = False  # composed rollouts widen with a verified decision of A_dec(h)

    prune_free = False  # ... decisions only global objectives score included
    prune_select = False  # ... and selection too
    prune_expand = False  # ... and the policy proposes among the unrefuted decisions only
    free_yield = False  # spent free decisions yield to untried recorded siblings (_alive)
    repair_cycle = False  # ... every near miss in turn (the least repaired first)
    swap = False  # composed turns: the latest near miss with one bound decision swapped
    swap_rr = False  # ... the position swapped least often first
    repair_every = 0  # repair turns every m-th iteration once a near miss exists (0: composed)
    repair_depth = 0  # k: the first near miss repaired fewer than k times, not the least
    repair_rank = False  # among the least repaired, the best on the global objectives
    repair = False  # composed turns replay the first locally complete trajectory, free
    # decisions (global-only ones) left to the rollout after it
    prune: str = ""  # "any"/"all": rollout choices skip refuted decisions (_refuted)
    defer_free = False  # composed walks: free decisions (global-only ones) last
    defer_local = False  # ... and a locally verified child first
    novel_pick = False  # a new history takes a child never taken in any rollout, if any
    defer_pick = False  # the rollout chooser leaves free decisions (coupons) for later
    optimistic = False  # unseen recorded decisions get prior 1 instead of 0
    budget_pick = False  # composed walks: else the locally verified child best on globals
    prior_pick = ""  # composed walks: else a locally verified child by prior ("best"/"sample")
    prereq_pick = False  # composed walks: else the child most verified decisions came after

    _reach_on: frozenset[str] | None = None  # set during a composed walk with ``reach``
    _prereqs: dict[str, frozenset[str]]  # verified action key -> the keys taken before it

    def _verified_child(self, edges: list[Edge], path: list[Edge],
                        verified_on: frozenset[str]) -> Edge | None:
        edge = super()._verified_child(edges, path, verified_on)
        if edge is not None:
            return edge
        if self.defer_free:
            edge = self._deferring(edges)
            if edge is not None:
                return edge
        if self.budget_pick:
            edge = self._best_on_globals(edges)
        if edge is None and self.prior_pick:
            edge = self._verified_by_prior(edges)
        if edge is None and self.prereq_pick:
            edge = self._enabling(edges, path)
        return edge

    def _is_refuted(self, e: Edge) -> bool:
        """Whether every rollout that took this decision failed one of its local objectives
        (``prune == "any"``) or all of them (``"all"``)."""
        return e.recorded and self._refuted_id(e.identity)

    def _refuted_id(self, v: Any) -> bool:
        hg = self.hypergraph
        assert hg is not None
        node = hg.nodes.get(v)
        if node is None:
            return False
        never = [p.total == 0.0 for g, p in node.by_label.items() if g in self._local_objectives]
        if not never:
            if self.prune_free:  # scored by global objectives only: refuted when always failed
                glob = [p.total == 0.0 for g, p in node.by_label.items()
                        if g in self._objective_ids]
                return bool(glob) and all(glob)
            return False
        return any(never) if self.prune == "any" else all(never)

    _repair_from: tuple[Action, ...] | None = None

    def record(self, actions: Sequence[Action], verdict: Verdict) -> None:
        """With ``repair``: keep the trajectory to repair -- the first one that met every
        local objective and failed a global one -- without its free decisions (the recorded
        ones no local objective is about) and its last step."""
        super().record(actions, verdict)
        if not (self.repair or self.swap) or (
                self._repair_from is not None and not self.repair_cycle and not self.swap):
            return
        scores, local = verdict.objective_scores, self._local_objectives
        if not local or not all(scores.get(g, 0.0) >= 1.0 for g in local):
            return
        if all(v >= 1.0 for v in scores.values()):
            return
        bound: set[Any] = set()
        for g in local:
            bound |= verdict.objective_decisions.get(g, frozenset())
        if self.swap:  # every near miss, and its bound set as tried
            self.__dict__.setdefault("_swaps_near", []).append(
                (tuple(actions[:-1]), frozenset(bound)))
            self.__dict__.setdefault("_swaps_tried", set()).add(frozenset(bound))
            return
        if self.repair_cycle:  # every near miss, by its bound decisions, first one kept
            near = self.__dict__.setdefault("_near", {})
            glob = [v for g, v in scores.items() if g not in local]
            near.setdefault(frozenset(bound), [tuple(actions[:-1]), 0, -sum(glob) / len(glob)])
            return
        self._repair_bound = bound
        self._repair_from = tuple(actions[:-1])

    def _repair_turn(self) -> bool:
        m = self.repair_every
        if not m:
            return self._composing()
        return bool(self.__dict__.get("_near")) and self.rollouts % m == m - 1

    def _labels(self, v: Any) -> frozenset[str]:
        hg = self.hypergraph
        assert hg is not None
        node = hg.nodes.get(v)
        return frozenset() if node is None else frozenset(
            g for g in node.by_label if g in self._local_objectives)

    def _swap_plan(self) -> tuple[tuple[Action, ...], set[Any]] | None:
        """The latest near miss with one bound decision swapped for a locally verified
        alternative about the same local objectives, the bound set not tried yet."""
        near = self.__dict__.get("_swaps_near")
        if not near:
            return None
        tried = self.__dict__["_swaps_tried"]
        used: dict[tuple[int, int], int] = self.__dict__.setdefault("_swaps_used", {})
        verified = list(self._verified.values())
        for j in range(len(near) - 1, -1, -1):
            actions, bound = near[j]
            candidates = []
            for i, action in enumerate(actions):
                v = action.key  # the suites' identities are their action keys
                if v not in bound:
                    continue
                labels = self._labels(v)
                if not labels:
                    continue
                for w, alternative in verified:
                    if w == v or w in bound or self._labels(w) != labels:
                        continue
                    swapped = (bound - {v}) | {w}
                    if swapped not in tried:
                        candidates.append((i, alternative, swapped))
            if not candidates:
                continue
            if self.swap_rr:  # the position swapped least often in this near miss first
                candidates.sort(key=lambda c: used.get((j, c[0]), 0))
            i, alternative, swapped = candidates[0]
            used[(j, i)] = used.get((j, i), 0) + 1
            tried.add(swapped)
            return (*actions[:i], alternative, *actions[i + 1:]), set(swapped)
        return None

    def iterate(self) -> None:
        if self.swap:
            plan = self._swap_plan() if self._composing() else None
            if plan is None:
                return super().iterate()
            self._repair_from, self._repair_bound = plan
            return self._repair_iteration()
        near = self.__dict__.get("_near")
        if self.repair_cycle and near and self._repair_turn():
            if self.repair_depth:  # the first near miss repaired fewer than k times
                open_ = [item for item in near.items() if item[1][1] < self.repair_depth]
                if self.repair_rank:  # the best on the global objectives first
                    open_.sort(key=lambda item: item[1][2])
                bound, entry = open_[0] if open_ else min(near.items(),
                                                          key=lambda item: item[1][1])
            elif self.repair_rank:  # ... the best on the global objectives among those
                bound, entry = min(near.items(), key=lambda item: (item[1][1], item[1][2]))
            else:  # the near miss repaired the fewest times so far (the first on ties)
                bound, entry = min(near.items(), key=lambda item: item[1][1])
            entry[1] += 1
            self._repair_bound, self._repair_from = set(bound), entry[0]
        if not (self.repair and self._repair_from is not None and self._repair_turn()):
            return super().iterate()
        return self._repair_iteration()

    def _repair_iteration(self) -> None:
        from hyperplan.search.mcts import _trajectory
        from hyperplan.search.tree import backup
        assert self.tree is not None and self.hypergraph is not None
        root = self.tree.root
        path: list[Edge] = []
        node = self._replay(root, path)
        if not node.terminal:
            node = self._walk(node, path, None)
        verdict = self._verify_at(node)
        actions, recorded = _trajectory(path)
        backup(path, root, verdict.reward)
        self.hypergraph.observe(recorded, verdict, self.env.objectives)
        self._note_evidence(path, actions, recorded, verdict)
        self.record(actions, verdict)
        return None

    def _replay(self, node: Node, path: list[Edge]) -> Node:
        """Down the tree along the trajectory to repair, skipping its free decisions
        (widening a history whose children lack the step); stops where a step is invalid."""
        assert self._repair_from is not None
        env = self.env
        for action in self._repair_from:
            if node.terminal:
                break
            self._goto(node)
            if env.recorded(action) and env.identity(action) not in self._repair_bound:
                continue  # a free decision: left to the rollout after the replay
            edges = self._open(node, path)
            edge = next((e for e in edges if e.action.key == action.key), None)
            if edge is None:
                self._goto(node)
                if action.key not in env.decision_index():
                    break
                edge = node.widen(action, env.identity(action), env.recorded(action))
            node = self._enter(node, edge, path)
        return node

    def _alive(self, edges: list[Edge]) -> list[Edge]:
        """With ``free_yield``: free decisions (scored by global objectives only) that failed
        them in every rollout that took them also yield to a recorded sibling that did not."""
        alive = super()._alive(edges)
        if not self.free_yield:
            return alive
        hg = self.hypergraph
        assert hg is not None
        glob = frozenset(o.id for o in self.env.objectives if o.scope == "global")

        def spent(e: Edge) -> bool:
            node = hg.nodes.get(e.identity) if e.recorded else None
            if node is None or any(g not in glob and g != "global" for g in node.by_label):
                return False
            return all(p.total == 0.0 for g, p in node.by_label.items() if g in glob)

        out = [e for e in alive if spent(e)]
        if out and any(e.recorded and e not in out for e in alive):
            return [e for e in alive if e not in out]
        return alive

    def _deferring(self, edges: list[Edge]) -> Edge | None:
        """Free decisions (recorded, and scored under global objectives only: coupons) wait
        until no other child is left; then the first one no rollout has taken yet."""
        hg = self.hypergraph
        assert hg is not None
        glob = frozenset(o.id for o in self.env.objectives if o.scope == "global") | {"global"}

        def free(e: Edge) -> bool:
            return e.recorded and hg.known(e.identity) and set(
                hg.nodes[e.identity].by_label) <= glob

        if self.defer_local:
            local = next((e for e in edges if e.recorded
                          and hg.verified(e.identity, self._local_objectives)), None)
            if local is not None:
                return local
        frees = [e for e in edges if free(e)]
        if not frees:
            return None
        if len(frees) < len(edges):
            return next(e for e in edges if not free(e))
        return None

    def _best_on_globals(self, edges: list[Edge]) -> Edge | None:
        """Among the children verified on their local objectives, the one whose rollouts met
        the global objectives most often (pooled mean over the global labels)."""
        hg = self.hypergraph
        assert hg is not None
        glob = frozenset(o.id for o in self.env.objectives if o.scope == "global")
        best, best_mean = None, -1.0
        for e in edges:
            if not (e.recorded and hg.verified(e.identity, self._local_objectives)):
                continue
            stats = hg.nodes[e.identity].by_label
            means = [p.total / p.count for g, p in stats.items() if g in glob]
            mean = sum(means) / len(means) if means else 0.0
            if mean > best_mean:
                best, best_mean = e, mean
        return best

    def _verified_by_prior(self, edges: list[Edge]) -> Edge | None:
        """Among the children verified on their local objectives, the one with the highest
        HyperUCT prior (``prior_pick == "best"``) or one drawn with probability proportional
        to its prior (``"sample"``; uniformly when every prior is 0)."""
        hg = self.hypergraph
        assert hg is not None
        kids = [e for e in edges
                if e.recorded and hg.verified(e.identity, self._local_objectives)]
        if not kids:
            return None
        priors = [hg.prior(e.identity) for e in kids]
        if self.prior_pick == "best":
            return kids[max(range(len(kids)), key=priors.__getitem__)]
        total = sum(priors)
        if total <= 0.0:
            return kids[self.rng.randrange(len(kids))]
        x = self.rng.random() * total
        for e, p in zip(kids, priors, strict=True):
            x -= p
            if x < 0.0:
                return e
        return kids[-1]

    def _enabling(self, edges: list[Edge], path: list[Edge]) -> Edge | None:
        """The child taken before the most verified decisions not yet on ``path`` in the
        rollouts that verified them (their prerequisites: searches, opened documents)."""
        taken = {e.action.key for e in path}
        missing = [k for k in self._verified if k not in taken]
        prereqs = getattr(self, "_prereqs", {})
        best, best_n = None, 0
        for e in edges:
            n = sum(1 for k in missing if e.action.key in prereqs.get(k, ()))
            if n > best_n:
                best, best_n = e, n
        return best

    def _note_verified(self, path: list[Edge], actions: list[Action],
                       touched: set[Any]) -> None:
        super()._note_verified(path, actions, touched)
        if not self.prereq_pick:
            return
        if not hasattr(self, "_prereqs"):
            self._prereqs = {}
        keys = [a.key for a in actions]
        for k in self._verified:
            if k not in self._prereqs and k in keys:
                self._prereqs[k] = frozenset(keys[:keys.index(k)])

    def _walk(self, node: Node, path: list[Edge], verified_on: frozenset[str] | None) -> Node:
        if verified_on is not None and self.compose_local:
            verified_on = self._local_objectives
        self._reach_on = verified_on if self.reach else None
        try:
            return super()._walk(node, path, verified_on)
        finally:
            self._reach_on = None

    def _open(self, node: Node, path: list[Edge]) -> list[Edge]:
        """With ``reach`` in a composed walk: when no child is verified, widen with a verified
        decision of A_dec(h), which the walk then takes."""
        edges = super()._open(node, path)
        on, hypergraph = self._reach_on, self.hypergraph
        if on is not None and edges and hypergraph is not None and not any(
                e.recorded and hypergraph.verified(e.identity, on) for e in edges):
            self._reach(node, edges, on)
        return node.edges

    def _picked(self, node: Node, edges: list[Edge], pick: Pick, scored: bool = False) -> Edge:
        """With ``select_child``, a new history's child by selection (first unvisited), or
        with probability ``eps`` a uniformly random one, instead of the rollout chooser's."""
        if self.prune and self.hypergraph is not None and not self.hypergraph.empty:
            alive = [e for e in edges if not self._is_refuted(e)]
            if len(alive) == 1:
                return alive[0]
            if alive and len(alive) < len(edges):
                edges = alive
        if self.defer_pick and self.hypergraph is not None and not self.hypergraph.empty:
            edges = self._deferred(edges)
            if len(edges) == 1:
                return edges[0]
        if self.novel_pick and self.hypergraph is not None and not self.hypergraph.empty:
            hg = self.hypergraph
            fresh = next((e for e in edges if e.recorded and not hg.known(e.identity)), None)
            if fresh is not None:
                return fresh
        if not self.select_child:
            return super()._picked(node, edges, pick, scored)
        if self.eps and self.rng.random() < self.eps:
            return edges[self.rng.randrange(len(edges))]
        return self.select(node)

    def _deferred(self, edges: list[Edge]) -> list[Edge]:
        """With ``defer_pick``: the rollout chooser leaves free decisions (recorded ones the
        hypergraph has scored under global objectives only: coupons) for later while a
        recorded decision some local objective is about is among the children; information
        steps and a non-recorded commit (finish) do not hold them back."""
        hg = self.hypergraph
        assert hg is not None
        glob = self._objective_ids - self._local_objectives | {"global"}

        def free(e: Edge) -> bool:
            node = hg.nodes.get(e.identity) if e.recorded else None
            return node is not None and set(node.by_label) <= glob

        frees = [e for e in edges if free(e)]
        if not frees:
            return edges
        rest = [e for e in edges if not free(e)]
        if any(e.recorded for e in rest):
            return rest
        return edges

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

    def priors(self, node: Node, edges: list[Edge] | None = None) -> list[float]:
        kids = node.edges if edges is None else edges
        hg = self.hypergraph
        assert hg is not None
        if self.optimistic:  # unseen recorded decisions: prior 1 (optimism under uncertainty)
            base = [hg.prior(e.identity) if not e.recorded or hg.known(e.identity) else 1.0
                    for e in kids]
            base = [p if e.recorded else -1.0 for e, p in zip(kids, base, strict=True)]
            known = [v for v in base if v >= 0.0]
            fill_v = sum(known) / len(known) if known else 0.0
            return [fill_v if v < 0.0 else v for v in base]
        if self.fill:
            values = [hg.prior(e.identity) if e.recorded and hg.known(e.identity) else -1.0
                      for e in kids]
            known = [v for v in values if v >= 0.0]
            mean = sum(known) / len(known) if known else 0.0
            base = [mean if v < 0.0 else v for v in values]
        else:
            base = super().priors(node, edges)
        if not self.boost:
            return base
        return [p + (1.0 if e.recorded and hg.verified(e.identity, self._local_objectives)
                     else 0.0) for e, p in zip(kids, base, strict=True)]

    def select(self, node: Node) -> Edge:
        """With ``prune_select``, selection skips refuted children while others are left."""
        if self.prune_select and self.hypergraph is not None and len(node.edges) > 1:
            alive = [e for e in node.edges if not self._is_refuted(e)]
            if alive and len(alive) < len(node.edges):
                return select_among(super().select, node, alive)
        return super().select(node)

    def _children(self, decisions: Sequence[Action], k: int) -> list[Action]:
        hg = self.hypergraph
        if self.prune_expand and hg is not None and not hg.empty:
            ids = self.env.recorded_ids(decisions)
            alive = [a for a, v in zip(decisions, ids, strict=True)
                     if v is None or not self._refuted_id(v)]
            if alive:
                decisions = alive
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


def graded_budget(verdict: Verdict, reward_too: bool = False) -> Verdict:
    """A shopping ``verdict`` with a broken budget objective scored budget / final price
    instead of 0 when the cart is complete and over budget (rho_g as graded search feedback;
    ``success`` and, unless ``reward_too``, R unchanged). With ``reward_too`` R moves by the
    same amount times the budget's weight in R, 1 / (n_items + 1). Other verdicts unchanged."""
    m = verdict.metrics
    if verdict.objective_scores.get("budget") != 0.0 or m.get("over_budget", 0.0) <= 0.0:
        return verdict  # met, not a shopping verdict, or an unfinished cart (stays at 0)
    graded = m["budget"] / m["final_price"]
    reward = verdict.reward + (graded / (m["chosen"] + 1) if reward_too else 0.0)
    return replace(verdict, objective_scores={**verdict.objective_scores, "budget": graded},
                   reward=reward)


def _variant(policy: Callable[[], Policy] = lambda: make_policy("heuristic"),
             plain: bool = False, graded: str = "", **switches: Any) -> Run:
    """A Variant run: the switches that are class attributes set on a subclass, the rest
    passed to the configuration (the full-path default); ``plain`` is UCT (lam = 0, no
    hypergraph); ``graded``: the budget objective graded (:func:`graded_budget`), "rho" in
    the objective scores only, "reward" in R as well."""
    attrs = {k: switches.pop(k) for k in list(switches) if hasattr(Variant, k)
             and not hasattr(MCTSConfig, k)}
    cls: type[Variant] = type("V", (Variant,), attrs)

    def run(env: SearchEnv, seed: int) -> SearchResult:
        config = MCTSConfig(**{**BEFORE, **switches})
        if plain:
            config = replace(config, lam=0.0, hypergraph=False)
        if not graded:
            return cls(env, policy(), config, seed).run()
        verify = env.verify
        env.verify = lambda: graded_budget(verify(), graded == "reward")  # type: ignore[method-assign]
        try:
            return cls(env, policy(), config, seed).run()
        finally:
            del env.verify

    return run


def _method(name: str, config: MCTSConfig) -> Run:
    return lambda env, seed: METHOD_FUNCS[name](env, make_policy("heuristic"), config, seed)


VARIANTS: dict[str, Run] = {
    # plain MCTS (lam = 0)
    "uct": _method("uct", MCTSConfig(**FL)),
    "uct_ending_last": _method("uct", MCTSConfig()),  # the default UCT since then
    "uct_commit_widen": _method("uct", design_config("commit-widen")),
    "uct_select_child": _variant(plain=True, select_child=True),
    **{f"uct_select_eps{e}": _variant(plain=True, select_child=True, eps=e)
       for e in (0.1, 0.25, 0.5)},
    "uct_select_sorted": _variant(SortedHeuristic, plain=True, select_child=True),
    "lats": _method("lats", MCTSConfig()),
    "hyper_commit_widen": _method("hypermcts", design_config("commit-widen")),
    # the hypergraph's uses in the full-path design
    "hyper": _method("hypermcts", MCTSConfig(**BEFORE)),
    # the default from the evidence pruning until free decisions last
    "pruned": _method("hypermcts", MCTSConfig(free_last=False, **FL)),
    "free_last": _method("hypermcts", MCTSConfig(**FL)),
    "ending_last": _method("hypermcts", MCTSConfig(evidence_width=1)),
    "open_parts": _method("hypermcts", MCTSConfig()),  # the default since then
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
    "compose_budget": _variant(budget_pick=True),
    # on the free-decisions-last default
    "fl_compose_budget": _variant(budget_pick=True, evidence_pruning=True, free_last=True),
    **{f"fl_compose_prior_{k}": _variant(prior_pick=k, evidence_pruning=True, free_last=True)
       for k in ("best", "sample")},
    "fl_optimistic": _variant(optimistic=True, evidence_pruning=True, free_last=True),
    "fl_variant": _variant(evidence_pruning=True, free_last=True),  # == free_last
    # the default's lam and c
    **{f"lam{lam}_c{c}": _method("hypermcts", MCTSConfig(lam=lam, c=c, **FL))
       for lam in (0.25, 0.5, 1.0, 2.0) for c in (0.25, 0.5, 1.0)},
    **{f"uct_c{c}": _method("uct", MCTSConfig(c=c, **FL)) for c in (0.25, 0.5, 1.0)},
    # the default's composed rollouts, evidence widening and pruning
    **{f"compose{m}_fl": _method("hypermcts", MCTSConfig(compose_every=m, **FL))
       for m in (0, 2, 4, 6)},
    "no_evw_fl": _method("hypermcts", MCTSConfig(evidence_widening=False, **FL)),
    "no_prune_fl": _method("hypermcts", MCTSConfig(evidence_pruning=False, **FL)),
    "optimistic": _variant(optimistic=True),
    "prune_any": _variant(prune="any"),
    "prune_all": _variant(prune="all"),
    "prune_sel": _variant(prune="any", prune_select=True),
    "prune_sel_free": _variant(prune="any", prune_select=True, prune_free=True),
    "free_yield": _variant(free_yield=True, evidence_pruning=True),
    "repair": _variant(repair=True, evidence_pruning=True),
    "repair_cycle": _variant(repair=True, repair_cycle=True, evidence_pruning=True),
    "defer_pick": _variant(defer_pick=True, evidence_pruning=True),
    "swap": _variant(swap=True, evidence_pruning=True, free_last=True),
    "swap_rr": _variant(swap=True, swap_rr=True, evidence_pruning=True, free_last=True),
    "free_last_graded": _variant(graded="rho", evidence_pruning=True, free_last=True),
    "repair_graded": _variant(repair=True, repair_cycle=True, repair_rank=True, graded="rho",
                              evidence_pruning=True),
    "repair_graded_d2": _variant(repair=True, repair_cycle=True, repair_rank=True,
                                 graded="rho", repair_depth=2, evidence_pruning=True),
    **{f"repair_cycle_every{m}": _variant(repair=True, repair_cycle=True, repair_every=m,
                                          evidence_pruning=True) for m in (2, 3)},
    **{f"repair_cycle_depth{k}": _variant(repair=True, repair_cycle=True, repair_depth=k,
                                          evidence_pruning=True) for k in (2, 4)},
    "prune_exp": _variant(prune="any", prune_expand=True),
    "prune_full": _variant(prune="any", prune_select=True, prune_expand=True),
    "defer": _variant(defer_free=True),
    "defer_local": _variant(defer_free=True, defer_local=True),
    "novel": _variant(novel_pick=True),
    "novel_opt": _variant(novel_pick=True, optimistic=True),
    "compose_prereq": _variant(prereq_pick=True),
    "compose_both": _variant(budget_pick=True, prereq_pick=True),
    "graded": _variant(graded="rho", evidence_pruning=True),
    "graded_both": _variant(graded="reward", evidence_pruning=True),
    "uct_graded": _variant(plain=True, graded="reward"),
    "forced_first": _variant(select_child=True, boost=True, replace_last=True, **PLAIN),
}


def _job(args: tuple[str, int, int, int, list[str]]) -> dict[str, tuple[float, int, float]]:
    """Per variant: success, policy calls and the case score (``metrics["score"]`` when the
    suite has one, as qa's half credit for abstention, else success)."""
    suite, seed, n, i, names = args
    env = load_tasks(suite, n, seed)[i]
    out = {}
    for name in names:
        result = VARIANTS[name](env, task_seed(seed, i))
        success = float(result.success)
        out[name] = (success, result.policy_calls,
                     float(result.verdict.metrics.get("score", success)))
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
        score = statistics.fmean(r[name][2] for r in rows)
        line = f"  {name:24s} case_acc {acc:.3f}  score {score:.3f}  calls/case {calls:6.1f}"
        if name != base:
            d = [r[name][0] - r[base][0] for r in rows]
            m, h = statistics.fmean(d), 1.96 * statistics.stdev(d) / math.sqrt(len(d))
            line += (f"  {name} - {base}: {100 * m:+.1f} "
                     f"[{100 * (m - h):+.1f}, {100 * (m + h):+.1f}]")
        print(line, flush=True)


class Recording(HyperMCTS):
    """HyperMCTS keeping every evaluated verdict (``seen``) and its action keys (``taken``)."""

    seen: list[Verdict]
    taken: list[list[str]]

    def record(self, actions: Sequence[Action], verdict: Verdict) -> None:
        self.seen.append(verdict)
        self.taken.append([a.key for a in actions])
        super().record(actions, verdict)


def failures(suite: str, seed: int, n: int, method: str) -> None:
    """Failed tasks of ``hyper`` (the default HyperMCTS) or ``uct``: was every local objective
    met by some rollout, and did one rollout meet them all (and break a global constraint)?"""
    config = {"hyper": MCTSConfig(**BEFORE), "pruned": MCTSConfig(free_last=False, **FL),
              "free_last": MCTSConfig(**FL),
              "ending_last": MCTSConfig(evidence_width=1), "open_parts": MCTSConfig()}.get(
        method, MCTSConfig(lam=0.0, hypergraph=False, **FL))
    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks(suite, n, seed)):
        search = Recording(env, make_policy("heuristic"), config, task_seed(seed, i))
        search.seen, search.taken = [], []
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


class Trajectories(HyperMCTS):
    """HyperMCTS keeping every evaluated trajectory's action keys (``trajectories``)."""

    trajectories: list[set[str]]

    def record(self, actions: Sequence[Action], verdict: Verdict) -> None:
        self.trajectories.append({a.key for a in actions})
        super().record(actions, verdict)


def gold_failures(seed: int, n: int, method: str) -> None:
    """Failed shopping tasks of ``hyper`` / ``pruned`` / ``uct`` against the hidden gold
    plan (read here for the analysis only; the search never sees it): was every gold product
    chosen by some rollout, did one rollout choose them all, and did such a rollout also apply
    the gold coupons?"""
    config = {"hyper": MCTSConfig(**BEFORE), "pruned": MCTSConfig(free_last=False, **FL),
              "free_last": MCTSConfig(**FL),
              "ending_last": MCTSConfig(evidence_width=1), "open_parts": MCTSConfig()}.get(
        method, MCTSConfig(lam=0.0, hypergraph=False, **FL))
    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks("shopping", n, seed)):
        search = Trajectories(env, make_policy("heuristic"), config, task_seed(seed, i))
        search.trajectories = []
        if search.run().success:
            continue
        task: Any = env.task  # type: ignore[attr-defined]
        gold = {f"choose:{it.index}:{pid}" for it, pid in zip(task.items, task.gold,
                                                              strict=True)}
        coupons = {f"coupon:{name}" for name in task.gold_coupons}
        seen = search.trajectories
        complete = [t for t in seen if gold <= t]
        counts["failed"] += 1
        counts["every gold product chosen by some rollout"] += all(
            any(g in t for t in seen) for g in gold)
        counts["the gold plan needs coupons"] += bool(coupons)
        counts["one rollout chose every gold product"] += bool(complete)
        counts["... and applied the gold coupons"] += any(coupons <= t for t in complete)
    print("shopping", seed, method, dict(counts))


def coupon_timing(seed: int, n: int, method: str = "pruned") -> None:
    """Failed shopping tasks of HyperMCTS (``pruned``, or with ``free_last``): in how many did
    a rollout meet every local objective with products that fit the budget under their best
    coupon set (the failure is then the coupons alone), and how many of the coupons the
    locally complete rollouts applied came before their last product choice (while the cart
    was partial)."""
    from hyperplan.eval.treesearch.suites.shopping_task import best_coupons

    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks("shopping", n, seed)):
        config = MCTSConfig(free_last=method != "pruned", **FL)
        search = Recording(env, make_policy("heuristic"), config, task_seed(seed, i))
        search.seen, search.taken = [], []
        if search.run().success:
            continue
        task: Any = env.task  # type: ignore[attr-defined]
        products = {p.pid: p for p in task.products}
        counts["failed"] += 1
        fits = False
        for taken, verdict in zip(search.taken, search.seen, strict=True):
            local = [sc for g, sc in verdict.objective_scores.items() if g != "budget"]
            if verdict.metrics["chosen"] < len(task.items) or min(local) < 1.0:
                continue
            chosen = [products[k.split(":")[2]] for k in taken if k.startswith("choose:")]
            best = best_coupons(chosen, task.coupons)
            fits = fits or sum(p.price for p in chosen) - sum(c.discount for c in best) \
                <= task.budget
            last = max(j for j, k in enumerate(taken) if k.startswith("choose:"))
            for j, k in enumerate(taken):
                if k.startswith("coupon:"):
                    counts["coupons applied by locally complete rollouts"] += 1
                    counts["... before the last product choice"] += j < last
        counts["a locally complete rollout's products fit with their best coupons"] += fits
    print("shopping", seed, dict(counts))


if __name__ == "__main__":
    if len(sys.argv) > 5 and sys.argv[4] == "--failures":
        failures(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5])
    elif len(sys.argv) > 5 and sys.argv[4] == "--gold":
        gold_failures(int(sys.argv[2]), int(sys.argv[3]), sys.argv[5])
    elif len(sys.argv) > 4 and sys.argv[4] == "--coupons":
        coupon_timing(int(sys.argv[2]), int(sys.argv[3]), *sys.argv[5:6])
    else:
        compare(sys.argv[1], [int(s) for s in sys.argv[2].split(",")], int(sys.argv[3]),
                sys.argv[4].split(","))
