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
configurations are parts of a tree design here (:class:`~hyperplan.search.parts.base.Design`;
:func:`variant_design`), never subclasses of HyperMCTS, so either build runs them. Dev seeds
only (0-999).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing import Pool
from typing import Any

from hyperplan.search.common import INFO, SearchResult
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, design_config
from hyperplan.search.parts.base import (
    ChildFilter,
    Composer,
    Design,
    Mark,
    Observer,
    PriorRule,
    Widener,
)
from hyperplan.search.parts.designs import design_of
from hyperplan.search.parts.pruning import EvidencePruning
from hyperplan.search.policies import HeuristicPolicy, Policy, _gumbel_top_k, make_policy
from hyperplan.search.selection import graph_priors
from hyperplan.search.tree import Edge, Node
from hyperplan_bench.eval.treesearch.runner import METHOD_FUNCS, load_tasks, task_seed

Run = Callable[[SearchEnv, int], SearchResult]
# the full-path default before the evidence pruning (the base of every variant here)
BEFORE: dict[str, Any] = {"evidence_pruning": False, "free_last": False, "ending_last": False,
                          "evidence_width": 1}
# the default from free decisions last until ending decisions last (what "free_last" names)
FL: dict[str, Any] = {"ending_last": False, "evidence_width": 1}
# the full-path design without our two first rules
PLAIN: dict[str, Any] = {"evidence_widening": False, "compose_every": 0}
NONE: frozenset[Mark] = frozenset()


class SortedHeuristic(HeuristicPolicy):
    """The heuristic's k draws returned sorted by hint instead of in draw order."""

    def _draw(self, env: SearchEnv, decisions: Sequence[Action], k: int,
              rng: Any) -> tuple[list[Action], list[float]]:
        scores = [env.hint(a) for a in decisions]
        idx = sorted(_gumbel_top_k(scores, k, self.temperature, rng), key=lambda i: -scores[i])
        return [decisions[i] for i in idx], scores


# -- the rejected variants, as parts (all off: HyperMCTS itself) ------------------------------


@dataclass(frozen=True)
class Refutation:
    """The variants' own refutation rule: a recorded decision is refuted when every rollout
    that took it failed one of its local objectives (``prune == "any"``) or all of them
    (``"all"``); with ``prune_free`` a decision only global objectives scored is refuted when
    it always failed them."""

    prune: str = "any"
    prune_free: bool = False

    def refuted(self, search: HyperMCTS, v: Any) -> bool:
        hg = search.hypergraph
        assert hg is not None
        node = hg.nodes.get(v)
        if node is None:
            return False
        local = search.ledger.local
        never = [p.total == 0.0 for g, p in node.by_label.items() if g in local]
        if not never:
            if self.prune_free:
                glob = [p.total == 0.0 for g, p in node.by_label.items()
                        if g in search.ledger.objective_ids]
                return bool(glob) and all(glob)
            return False
        return any(never) if self.prune == "any" else all(never)

    def alive(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        return [e for e in edges if not (e.recorded and self.refuted(search, e.identity))]


@dataclass(frozen=True)
class PruneRule(ChildFilter):
    """A child filter (``prune``, ``prune_select``): children the rule refutes are skipped
    while others are left; in the rollout (``in_select`` False) only once the hypergraph has
    data, the only one left taken."""

    rule: Refutation
    in_select: bool = False
    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        hg = search.hypergraph
        if hg is None or (not self.in_select and hg.empty):
            return edges
        alive = self.rule.alive(search, edges)
        if len(alive) == 1 and not self.in_select:
            return alive
        return alive if alive and len(alive) < len(edges) else edges


@dataclass
class PruneExpandPolicy:
    """A policy proposing among the decisions the rule leaves (``prune_expand``): set
    ``search`` after the search is made. Rollout choices and scored draws are the inner
    policy's."""

    inner: Any
    rule: Refutation
    search: HyperMCTS | None = None

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def _alive(self, env: SearchEnv, decisions: Sequence[Action]) -> Sequence[Action]:
        search = self.search
        hg = search.hypergraph if search is not None else None
        if search is None or hg is None or hg.empty:
            return decisions
        alive = [a for a in decisions if not (env.recorded(a) and self.rule.refuted(
            search, env.identity(a)))]
        return alive or decisions

    def propose(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                rng: Any) -> list[Action]:
        return list(self.inner.propose(env, self._alive(env, decisions), k, rng))

    def propose_scored(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                       rng: Any) -> Any:
        return self.inner.propose_scored(env, self._alive(env, decisions), k, rng)

    def choose(self, scores: Sequence[float], rng: Any) -> int:
        return int(self.inner.choose(scores, rng))

    def rollout(self, env: SearchEnv, decisions: Sequence[Action], rng: Any) -> Action:
        return self.inner.rollout(env, decisions, rng)  # type: ignore[no-any-return]


def _free_on_globals(search: HyperMCTS, e: Edge) -> bool:
    """Whether the hypergraph has scored ``e``'s decision under global objectives only."""
    hg = search.hypergraph
    assert hg is not None
    node = hg.nodes.get(e.identity) if e.recorded else None
    glob = search.ledger.objective_ids - search.ledger.local | {"global"}
    return node is not None and set(node.by_label) <= glob


@dataclass(frozen=True)
class DeferPick(ChildFilter):
    """A child filter (``defer_pick``): free decisions wait while a recorded decision some
    local objective is about is among the children; information steps and a non-recorded
    commit (finish) do not hold them back."""

    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        hg = search.hypergraph
        if hg is None or hg.empty:
            return edges
        frees = [e for e in edges if _free_on_globals(search, e)]
        if not frees:
            return edges
        rest = [e for e in edges if not _free_on_globals(search, e)]
        return rest if any(e.recorded for e in rest) else edges


@dataclass(frozen=True)
class NovelPick(ChildFilter):
    """A child filter (``novel_pick``): a new history takes a child never taken in any
    rollout, if any."""

    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        hg = search.hypergraph
        if hg is None or hg.empty:
            return edges
        fresh = next((e for e in edges if e.recorded and not hg.known(e.identity)), None)
        return edges if fresh is None else [fresh]


@dataclass(frozen=True)
class SelectChild(ChildFilter):
    """The last child filter (``select_child``): a new history's child by selection (first
    unvisited), or with probability ``eps`` a uniformly random one."""

    eps: float = 0.0
    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        rng = search.rng
        if self.eps and rng.random() < self.eps:
            return [edges[rng.randrange(len(edges))]]
        return [search.select(edges[0].parent)]


@dataclass(frozen=True)
class FreeYield(ChildFilter):
    """The evidence pruning (``free_yield``) where free decisions that failed their global
    objectives in every rollout that took them also yield to a recorded sibling that did
    not."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.REFUTED})

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        if not search.ledger.refuted:
            return edges
        alive = EvidencePruning().keep(search, edges)
        hg = search.hypergraph
        assert hg is not None
        glob = frozenset(o.id for o in search.env.objectives if o.scope == "global")

        def spent(e: Edge) -> bool:
            node = hg.nodes.get(e.identity) if e.recorded else None
            if node is None or any(g not in glob and g != "global" for g in node.by_label):
                return False
            return all(p.total == 0.0 for g, p in node.by_label.items() if g in glob)

        out = [e for e in alive if spent(e)]
        if out and any(e.recorded and e not in out for e in alive):
            return [e for e in alive if e not in out]
        return alive


@dataclass(frozen=True)
class VariantPrior(PriorRule):
    """The prior HyperUCT reads: ``optimistic`` (unseen recorded decisions at 1), ``fill``
    (unseen recorded decisions at the mean prior of their known siblings), ``boost`` (+1 for
    a locally verified child)."""

    optimistic: bool = False
    fill: bool = False
    boost: bool = False
    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def priors(self, search: HyperMCTS, kids: list[Edge]) -> list[float]:
        hg = search.hypergraph
        assert hg is not None
        if self.optimistic:
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
            base = graph_priors(hg, kids, search.config.info_prior == "neutral")
        if not self.boost:
            return base
        local = search.ledger.local
        return [p + (1.0 if e.recorded and hg.verified(e.identity, local) else 0.0)
                for e, p in zip(kids, base, strict=True)]


@dataclass(frozen=True)
class ReplaceLast(Widener):
    """A widener (``replace_last``), before the evidence widening: a locally verified
    decision of A_dec(h) replaces the b-th proposal of a new history."""

    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def visit(self, search: HyperMCTS, node: Node) -> None:
        return None

    def wants_index(self, search: HyperMCTS) -> bool:
        return False

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        hg, k = search.hypergraph, search.config.branching
        if not (search.config.lam and hg is not None and not hg.empty):
            return
        have = {e.action.key for e in node.edges}
        rest = [a for a in decisions if a.kind is not INFO and a.key not in have]
        for action, v in zip(rest, search.env.recorded_ids(rest), strict=True):
            if v is not None and hg.verified(v, search.ledger.local):
                if len(node.edges) >= k:
                    node.edges.pop()
                node.edges.append(Edge(action, v, True, node))
                return


@dataclass
class Book(Observer):
    """What the variants keep from the rollouts (an observer): the trajectory to repair and
    its bound decisions, the near misses (``repair_cycle``), the swap candidates (``swap``)
    and the keys taken before each verified decision (``prereq_pick``)."""

    repair: bool = False
    repair_cycle: bool = False
    swap: bool = False
    prereq_pick: bool = False
    repair_from: tuple[Action, ...] | None = None
    repair_bound: set[Any] = field(default_factory=set)
    near: dict[frozenset[Any], list[Any]] = field(default_factory=dict)
    swaps_near: list[tuple[tuple[Action, ...], frozenset[Any]]] = field(default_factory=list)
    swaps_tried: set[frozenset[Any]] = field(default_factory=set)
    swaps_used: dict[tuple[int, int], int] = field(default_factory=dict)
    prereqs: dict[str, frozenset[str]] = field(default_factory=dict)
    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def observed(self, search: HyperMCTS, actions: Sequence[Action], verdict: Verdict) -> None:
        if self.prereq_pick:
            keys = [a.key for a in actions]
            for k in search.ledger.verified:
                if k not in self.prereqs and k in keys:
                    self.prereqs[k] = frozenset(keys[:keys.index(k)])
        if not (self.repair or self.swap) or (
                self.repair_from is not None and not self.repair_cycle and not self.swap):
            return
        scores, local = verdict.objective_scores, search.ledger.local
        if not local or not all(scores.get(g, 0.0) >= 1.0 for g in local):
            return
        if all(v >= 1.0 for v in scores.values()):
            return
        bound: set[Any] = set()
        for g in local:
            bound |= verdict.objective_decisions.get(g, frozenset())
        if self.swap:  # every near miss, and its bound set as tried
            self.swaps_near.append((tuple(actions[:-1]), frozenset(bound)))
            self.swaps_tried.add(frozenset(bound))
            return
        if self.repair_cycle:  # every near miss, by its bound decisions, first one kept
            glob = [v for g, v in scores.items() if g not in local]
            self.near.setdefault(frozenset(bound),
                                 [tuple(actions[:-1]), 0, -sum(glob) / len(glob)])
            return
        self.repair_bound = bound
        self.repair_from = tuple(actions[:-1])


def _labels(search: HyperMCTS, v: Any) -> frozenset[str]:
    hg = search.hypergraph
    assert hg is not None
    node = hg.nodes.get(v)
    local = search.ledger.local
    return frozenset() if node is None else frozenset(g for g in node.by_label if g in local)


@dataclass
class VariantComposer(Composer):
    """The composed walks of the variants: the default's (``every``; with ``local`` on the
    local objectives only), ``reach`` (widen with a verified decision of A_dec(h) where no
    child is verified), and, where no child is verified, ``defer_free`` / ``defer_local``,
    ``budget_pick``, ``prior_pick``, ``prereq_pick``; and the repair turns (``repair``,
    ``repair_cycle``, ``repair_every``, ``repair_depth``, ``repair_rank``, ``swap``,
    ``swap_rr``) replaying a near miss read from ``book``."""

    book: Book
    every: int = 3
    local: bool = False
    reach: bool = False
    defer_free: bool = False
    defer_local: bool = False
    budget_pick: bool = False
    prior_pick: str = ""
    prereq_pick: bool = False
    repair: bool = False
    repair_cycle: bool = False
    repair_every: int = 0
    repair_depth: int = 0
    repair_rank: bool = False
    swap: bool = False
    swap_rr: bool = False
    replaying: bool = False
    cursor: int = 0
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.VERIFIED})

    def _composing(self, search: HyperMCTS) -> bool:
        m = self.every
        return m > 0 and bool(search.ledger.verified) and search.rollouts % m == m - 1

    def _repair_turn(self, search: HyperMCTS) -> bool:
        m = self.repair_every
        if not m:
            return self._composing(search)
        return bool(self.book.near) and search.rollouts % m == m - 1

    def due(self, search: HyperMCTS) -> bool:
        self.replaying, self.cursor = False, 0
        book = self.book
        if self.swap:
            plan = self._swap_plan(search) if self._composing(search) else None
            if plan is None:
                return self._composing(search)
            book.repair_from, book.repair_bound = plan
            self.replaying = True
            return True
        if self.repair_cycle and book.near and self._repair_turn(search):
            self._next_near_miss()
        if not (self.repair and book.repair_from is not None and self._repair_turn(search)):
            return self._composing(search)
        self.replaying = True
        return True

    def _next_near_miss(self) -> None:
        near = self.book.near
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
        self.book.repair_bound, self.book.repair_from = set(bound), entry[0]

    def _swap_plan(self, search: HyperMCTS) -> tuple[tuple[Action, ...], set[Any]] | None:
        """The latest near miss with one bound decision swapped for a locally verified
        alternative about the same local objectives, the bound set not tried yet."""
        book = self.book
        verified = list(search.ledger.verified.values())
        for j in range(len(book.swaps_near) - 1, -1, -1):
            actions, bound = book.swaps_near[j]
            candidates = []
            for i, action in enumerate(actions):
                v = action.key  # the suites' identities are their action keys
                labels = _labels(search, v) if v in bound else frozenset()
                if not labels:
                    continue
                for w, alternative in verified:
                    if w == v or w in bound or _labels(search, w) != labels:
                        continue
                    swapped = (bound - {v}) | {w}
                    if swapped not in book.swaps_tried:
                        candidates.append((i, alternative, swapped))
            if not candidates:
                continue
            if self.swap_rr:  # the position swapped least often in this near miss first
                candidates.sort(key=lambda c: book.swaps_used.get((j, c[0]), 0))
            i, alternative, swapped = candidates[0]
            book.swaps_used[(j, i)] = book.swaps_used.get((j, i), 0) + 1
            book.swaps_tried.add(swapped)
            return (*actions[:i], alternative, *actions[i + 1:]), set(swapped)
        return None

    def child(self, search: HyperMCTS, edges: list[Edge]) -> Edge | None:
        if self.replaying:
            return self._replayed(search, edges)
        hg = search.hypergraph
        assert hg is not None
        on = search.ledger.local if self.local else search.ledger.objective_ids
        if self.reach and not any(e.recorded and hg.verified(e.identity, on) for e in edges):
            _reach(search, edges[0].parent, edges, on)
        edge = next((e for e in edges if e.recorded and hg.verified(e.identity, on)), None)
        if edge is not None:
            return edge
        if self.defer_free:
            edge = _deferring(search, edges, self.defer_local)
            if edge is not None:
                return edge
        if self.budget_pick:
            edge = _best_on_globals(search, edges)
        if edge is None and self.prior_pick:
            edge = _verified_by_prior(search, edges, self.prior_pick)
        if edge is None and self.prereq_pick:
            edge = _enabling(search, edges, self.book.prereqs)
        return edge

    def _replayed(self, search: HyperMCTS, edges: list[Edge]) -> Edge | None:
        """Down the tree along the trajectory to repair, skipping its free decisions
        (widening a history whose children lack the step); where a step is invalid, the
        replay ends and HyperUCT chooses there."""
        steps, bound, env = self.book.repair_from, self.book.repair_bound, search.env
        assert steps is not None
        node = edges[0].parent
        while self.cursor < len(steps):
            action = steps[self.cursor]
            self.cursor += 1
            search.goto(node)
            if env.recorded(action) and env.identity(action) not in bound:
                continue  # a free decision: left to the rollout after the replay
            edge = next((e for e in edges if e.action.key == action.key), None)
            if edge is None:
                search.goto(node)
                if action.key not in env.decision_index():
                    self.cursor = len(steps)
                    return search.select(node)
                edge = node.widen(action, env.identity(action), env.recorded(action))
            return edge
        return None


def _reach(search: HyperMCTS, node: Node, edges: list[Edge], on: frozenset[str]) -> None:
    hg = search.hypergraph
    assert hg is not None
    search.goto(node)
    have = {e.action.key for e in edges}
    for action in search._decisions():
        if action.kind is INFO or action.key in have:
            continue
        v = search.env.recorded_ids([action])[0]
        if v is not None and hg.verified(v, on):
            node.widen(action, v, True)
            return


def _deferring(search: HyperMCTS, edges: list[Edge], local_first: bool) -> Edge | None:
    """Free decisions (recorded, and scored under global objectives only: coupons) wait
    until no other child is left; then the first one no rollout has taken yet."""
    hg = search.hypergraph
    assert hg is not None
    glob = frozenset(o.id for o in search.env.objectives if o.scope == "global") | {"global"}

    def free(e: Edge) -> bool:
        return e.recorded and hg.known(e.identity) and set(
            hg.nodes[e.identity].by_label) <= glob

    if local_first:
        local = next((e for e in edges if e.recorded
                      and hg.verified(e.identity, search.ledger.local)), None)
        if local is not None:
            return local
    frees = [e for e in edges if free(e)]
    if not frees:
        return None
    if len(frees) < len(edges):
        return next(e for e in edges if not free(e))
    return None


def _best_on_globals(search: HyperMCTS, edges: list[Edge]) -> Edge | None:
    """Among the children verified on their local objectives, the one whose rollouts met
    the global objectives most often (pooled mean over the global labels)."""
    hg = search.hypergraph
    assert hg is not None
    glob = frozenset(o.id for o in search.env.objectives if o.scope == "global")
    best, best_mean = None, -1.0
    for e in edges:
        if not (e.recorded and hg.verified(e.identity, search.ledger.local)):
            continue
        stats = hg.nodes[e.identity].by_label
        means = [p.total / p.count for g, p in stats.items() if g in glob]
        mean = sum(means) / len(means) if means else 0.0
        if mean > best_mean:
            best, best_mean = e, mean
    return best


def _verified_by_prior(search: HyperMCTS, edges: list[Edge], how: str) -> Edge | None:
    """Among the children verified on their local objectives, the one with the highest
    HyperUCT prior (``how == "best"``) or one drawn with probability proportional to its
    prior (``"sample"``; uniformly when every prior is 0)."""
    hg = search.hypergraph
    assert hg is not None
    kids = [e for e in edges
            if e.recorded and hg.verified(e.identity, search.ledger.local)]
    if not kids:
        return None
    priors = [hg.prior(e.identity) for e in kids]
    if how == "best":
        return kids[max(range(len(kids)), key=priors.__getitem__)]
    total = sum(priors)
    if total <= 0.0:
        return kids[search.rng.randrange(len(kids))]
    x = search.rng.random() * total
    for e, p in zip(kids, priors, strict=True):
        x -= p
        if x < 0.0:
            return e
    return kids[-1]


def _enabling(search: HyperMCTS, edges: list[Edge],
              prereqs: dict[str, frozenset[str]]) -> Edge | None:
    """The child taken before the most verified decisions not yet on the path in the
    rollouts that verified them (their prerequisites: searches, opened documents)."""
    taken = {e.action.key for e in search.path}
    missing = [k for k in search.ledger.verified if k not in taken]
    best, best_n = None, 0
    for e in edges:
        n = sum(1 for k in missing if e.action.key in prereqs.get(k, ()))
        if n > best_n:
            best, best_n = e, n
    return best


SWITCHES = ("select_child", "eps", "fill", "replace_last", "boost", "compose_local", "reach",
            "prune_free", "prune_select", "prune_expand", "free_yield", "repair_cycle", "swap",
            "swap_rr", "repair_every", "repair_depth", "repair_rank", "repair", "prune",
            "defer_free", "defer_local", "novel_pick", "defer_pick", "optimistic",
            "budget_pick", "prior_pick", "prereq_pick")
"""The variants' switches that are parts (the others are configuration fields)."""


def variant_design(config: MCTSConfig, **on: Any) -> Design:
    """The design of the configuration ``config`` with the variants' parts the switches
    ``on`` (:data:`SWITCHES`) turn on, made anew for one search (its book is the search's)."""
    design = design_of(config)
    rule = Refutation(on.get("prune") or "any", on.get("prune_free", False))
    first: list[Any] = [part for key, part in (
        ("prune", PruneRule(rule)), ("defer_pick", DeferPick()), ("novel_pick", NovelPick()))
        if on.get(key)]
    last: list[Any] = [SelectChild(on.get("eps", 0.0))] if on.get("select_child") else []
    if on.get("free_yield"):
        design = design._replace(
            select_filters=tuple(FreeYield() if isinstance(p, EvidencePruning) else p
                                 for p in design.select_filters),
            rollout_filters=tuple(FreeYield() if isinstance(p, EvidencePruning) else p
                                  for p in design.rollout_filters))
    select = (PruneRule(rule, True),) if on.get("prune_select") else ()
    book = Book(**{k: on.get(k, False) for k in ("repair", "repair_cycle", "swap",
                                                  "prereq_pick")})
    replays = on.get("repair") or on.get("swap")
    composer = VariantComposer(book, config.compose_every if design.composer else 0, **{
        k: on[k] for k in ("defer_free", "defer_local", "budget_pick", "prior_pick",
                           "repair", "repair_cycle", "repair_every", "repair_depth",
                           "repair_rank", "swap", "swap_rr", "prereq_pick", "reach")
        if k in on}, local=on.get("compose_local", False))
    prior = VariantPrior(on.get("optimistic", False), on.get("fill", False),
                         on.get("boost", False))
    return design._replace(
        rollout_filters=(*first, *design.rollout_filters, *last),
        select_filters=(*select, *design.select_filters),
        wideners=(ReplaceLast(),) * bool(on.get("replace_last")) + design.wideners,
        composer=composer if design.composer is not None or replays else None,
        observers=(book,),
        prior=prior if prior != VariantPrior() else None)


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
    """A variant's run: the switches that are parts (:data:`SWITCHES`) in its design
    (:func:`variant_design`, made anew for each search), the rest passed to the
    configuration (the full-path default); ``plain`` is UCT (lam = 0, no hypergraph);
    ``graded``: the budget objective graded (:func:`graded_budget`), "rho" in the objective
    scores only, "reward" in R as well."""
    on = {k: switches.pop(k) for k in list(switches) if k in SWITCHES}

    def run(env: SearchEnv, seed: int) -> SearchResult:
        config = MCTSConfig(**{**BEFORE, **switches})
        if plain:
            config = replace(config, lam=0.0, hypergraph=False)
        chosen: Any = policy()
        if on.get("prune_expand"):
            chosen = PruneExpandPolicy(chosen, Refutation(on.get("prune") or "any",
                                                          on.get("prune_free", False)))
        search = HyperMCTS(env, chosen, config, seed, design=variant_design(config, **on))
        if isinstance(chosen, PruneExpandPolicy):
            chosen.search = search
        if not graded:
            return search.run()
        verify = env.verify
        env.verify = lambda: graded_budget(verify(), graded == "reward")  # type: ignore[method-assign]
        try:
            return search.run()
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


@dataclass
class Recorder(Observer):
    """An observer keeping every evaluated verdict (``seen``) and its action keys
    (``taken``)."""

    seen: list[Verdict] = field(default_factory=list)
    taken: list[list[str]] = field(default_factory=list)
    @property
    def reads(self) -> frozenset[Mark]:
        return NONE

    def observed(self, search: HyperMCTS, actions: Sequence[Action], verdict: Verdict) -> None:
        self.seen.append(verdict)
        self.taken.append([a.key for a in actions])


def recorded(env: SearchEnv, config: MCTSConfig, seed: int) -> tuple[bool, Recorder]:
    """Whether HyperMCTS (the design ``config`` names, heuristic policy) solved ``env``, and
    its rollouts."""
    recorder = Recorder()
    design = design_of(config)._replace(observers=(recorder,))
    result = HyperMCTS(env, make_policy("heuristic"), config, seed, design=design).run()
    return result.success, recorder


def failures(suite: str, seed: int, n: int, method: str) -> None:
    """Failed tasks of ``hyper`` (the default HyperMCTS) or ``uct``: was every local objective
    met by some rollout, and did one rollout meet them all (and break a global constraint)?"""
    config = {"hyper": MCTSConfig(**BEFORE), "pruned": MCTSConfig(free_last=False, **FL),
              "free_last": MCTSConfig(**FL),
              "ending_last": MCTSConfig(evidence_width=1), "open_parts": MCTSConfig()}.get(
        method, MCTSConfig(lam=0.0, hypergraph=False, **FL))
    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks(suite, n, seed)):
        solved, search = recorded(env, config, task_seed(seed, i))
        if solved:
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
        solved, search = recorded(env, config, task_seed(seed, i))
        if solved:
            continue
        task: Any = env.task  # type: ignore[attr-defined]
        gold = {f"choose:{it.index}:{pid}" for it, pid in zip(task.items, task.gold,
                                                              strict=True)}
        coupons = {f"coupon:{name}" for name in task.gold_coupons}
        seen = [set(taken) for taken in search.taken]
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
    from hyperplan_bench.eval.treesearch.suites.shopping_task import best_coupons

    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks("shopping", n, seed)):
        config = MCTSConfig(free_last=method != "pruned", **FL)
        solved, search = recorded(env, config, task_seed(seed, i))
        if solved:
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
