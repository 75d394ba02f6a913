"""Dev-only (seeds 0-999): the fourth round on shopping's product combinations, each a
variant of the default HyperMCTS before ending decisions last (``free_last``), compared as
in tree_designs.py (docs/benchmarks.md, "Product combinations on shopping"; the variant
``finish_last_recorded`` became ``MCTSConfig.ending_last``, "Ending decisions last").

    python scripts/dev/combinations.py SUITE SEEDS TASKS VARIANT[,VARIANT...]
    python scripts/dev/combinations.py shopping 11,12 100 free_last,nogood_near,evw_prior
    python scripts/dev/combinations.py shopping 11 100 --alternatives
    python scripts/dev/combinations.py shopping 11 100 --repeats
    python scripts/dev/combinations.py qa 11 100 --abstentions

* ``nogood_{all,near,local}`` -- the rollout chooser skips a child whose recorded decision
  would complete the bound decision set (recorded, not free) of an evaluated trajectory that
  failed (every failed one / only those that met every local objective / only those that
  failed a local one), while another child is left; ``nogood_full`` the same over every
  recorded decision, free ones included, and no finishing on a failed set; ``..._sel``
  selection too.
* ``free_{best,sample}`` -- once only free decisions (and commits that are not recorded) are
  left at a new history, the free child of highest prior, or one drawn prop. to prior + 0.1.
* ``evw_{prior,fewest}`` -- evidence widening adds the locally verified decision of highest
  prior / fewest observations instead of the first in A_dec(h) order.

Each variant is a tree design (:class:`~hyperplan.search.parts.base.Design`) with parts of
its own (child filters, wideners, an observer) put beside the default's, never a subclass of
HyperMCTS; a part that keeps statistics of its own is made anew for each search.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import tree_designs as td

from hyperplan.search.env import Action, ActionKind, SearchEnv, Verdict
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.parts.base import (
    ChildFilter,
    Design,
    Mark,
    Observer,
    Widener,
)
from hyperplan.search.parts.designs import design_of
from hyperplan.search.parts.evidence_widening import EvidenceWidening, add_evidence
from hyperplan.search.parts.free_last import FreeLast
from hyperplan.search.parts.pruning import EvidencePruning
from hyperplan.search.policies import make_policy
from hyperplan.search.tree import Edge, Node
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed

COMMIT = ActionKind.COMMIT
INFO = ActionKind.INFO
NONE: frozenset[Mark] = frozenset()


def _run(change: Callable[[Design], Design], plain: bool = False,
         current: bool = False) -> td.Run:
    """A run of the design ``change`` makes of the default configuration's before ending
    decisions last (``plain``: UCT, lam = 0 without the hypergraph; ``current``: the default
    since, with it); ``change`` is called for each search (its parts' statistics are the
    search's own)."""
    before = {"evidence_width": 1} if current else td.FL
    config = MCTSConfig(lam=0.0, hypergraph=False, **before) if plain else MCTSConfig(**before)

    def run(env: SearchEnv, seed: int) -> Any:
        design = change(design_of(config))
        return HyperMCTS(env, make_policy("heuristic"), config, seed, design=design).run()

    return run


def _first(design: Design, part: Any, in_select: bool = False) -> Design:
    """``design`` with the child filter ``part`` before its rollout filters (``in_select``:
    before its selection filters too)."""
    out = design._replace(rollout_filters=(part, *design.rollout_filters))
    return out._replace(select_filters=(part, *design.select_filters)) if in_select else out


@dataclass
class Nogood(ChildFilter, Observer):
    """Nogood avoidance (module doc): a child filter, and the observer that collects the
    failed bound decision sets."""

    scope: str = "all"  # which failed trajectories: "all", "near", "local" or "full"
    nogoods: set[frozenset[str]] = field(default_factory=set)
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.FREE})

    def observed(self, search: HyperMCTS, actions: Sequence[Action], verdict: Verdict) -> None:
        if verdict.success:
            return
        scores, local = verdict.objective_scores, search.ledger.local
        if self.scope == "near" and (not scores or any(
                scores.get(g, 0.0) < 1.0 for g in local)):
            return
        if self.scope == "local" and (not scores or all(
                scores.get(g, 0.0) >= 1.0 for g in local)):
            return
        ids: Sequence[Hashable | None] = search.env.recorded_ids(list(actions))
        full, free = self.scope == "full", search.ledger.free
        bound = frozenset(a.key for a, v in zip(actions, ids, strict=True)
                          if v is not None and (full or v not in free))
        if bound:
            self.nogoods.add(bound)

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        if not self.nogoods:
            return edges
        path, nogoods, free = search.path, self.nogoods, search.ledger.free
        if self.scope == "full":  # every recorded decision counts (free ones too); a commit
            # that is not recorded (finish) is skipped when the path's set itself failed
            held = frozenset(e.action.key for e in path if e.recorded)
            ends_failed = held in nogoods
            keep = [e for e in edges
                    if not ((e.recorded and held | {e.action.key} in nogoods)
                            or (ends_failed and not e.recorded and e.action.kind is COMMIT))]
            return keep or edges
        bound = frozenset(e.action.key for e in path if e.recorded and e.identity not in free)
        keep = [e for e in edges if not (e.recorded and e.identity not in free
                                         and bound | {e.action.key} in nogoods)]
        return keep or edges


def _nogood(scope: str, in_select: bool) -> Callable[[Design], Design]:
    def change(design: Design) -> Design:
        part = Nogood(scope)
        return _first(design, part, in_select)._replace(observers=(part,))

    return change


@dataclass(frozen=True)
class FreeGuided(ChildFilter):
    """A child filter choosing at a history whose children left are free decisions (and
    commits that are not recorded): ``how`` = "best": the free child of highest prior;
    "sample": drawn with probability prop. to prior + 0.1. (Free identities are known to the
    hypergraph by definition, so every one has a prior.)"""

    how: str = "best"
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.FREE})

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        free = search.ledger.free
        if not free:
            return edges
        left = FreeLast().keep(search, edges)
        frees = [e for e in left if e.recorded and e.identity in free]
        if not frees or not all((e.recorded and e.identity in free)
                                or e.action.kind is COMMIT for e in left):
            return edges
        hg = search.hypergraph
        assert hg is not None
        priors = [hg.prior(e.identity) for e in frees]
        if self.how == "best":
            return [frees[max(range(len(frees)), key=priors.__getitem__)]]
        weights = [p + 0.1 for p in priors]
        x = search.rng.random() * sum(weights)
        for e, w in zip(frees, weights, strict=True):
            x -= w
            if x < 0:
                return [e]
        return [frees[-1]]


@dataclass(frozen=True)
class EvidenceChoice(Widener):
    """A widener: evidence widening adding, among the locally verified decisions of A_dec(h)
    not yet children, the one of highest prior (``rank = "prior"``) or with the fewest
    observations (``"fewest"``) instead of the first in A_dec(h) order."""

    rank: str = "prior"
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.VERIFIED})

    def visit(self, search: HyperMCTS, node: Node) -> None:
        return None

    def wants_index(self, search: HyperMCTS) -> bool:
        return bool(search.ledger.verified)

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        if index is None:
            return
        hits = set(search.ledger.verified.keys() & index.keys())
        for edge in node.edges:
            hits.discard(edge.action.key)
        hg = search.hypergraph
        assert hg is not None
        cands = []
        for key in sorted(hits, key=index.__getitem__):
            action = decisions[index[key]]
            if action.kind is INFO:
                continue
            v = search.env.recorded_id(action)
            if v is None or not hg.verified(v, search.ledger.local):
                continue
            cands.append((action, v))
        if not cands:
            return
        if self.rank == "prior":
            score = [hg.prior(v) for _, v in cands]
        else:
            score = [-sum(p.count for p in hg.nodes[v].by_label.values()) for _, v in cands]
        i = max(range(len(cands)), key=score.__getitem__)
        node.widen(cands[i][0], cands[i][1], True)


@dataclass(frozen=True)
class FinishLast(ChildFilter):
    """A child filter: free decisions before finishing -- at a new history, the commits that
    are not recorded (finishing) wait while a free child is left (``among = "free"``), or any
    recorded child (``"recorded"``)."""

    among: str = "free"
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.FREE})

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        if self.among == "free":
            free = search.ledger.free
            held = any(e.recorded and e.identity in free for e in edges)
        else:
            held = any(e.recorded for e in edges)
        if held:
            rest = [e for e in edges if e.recorded or e.action.kind is not COMMIT]
            if len(rest) < len(edges):
                return rest
        return edges


@dataclass(frozen=True)
class PruneKeepsPlan(ChildFilter):
    """Evidence pruning that never leaves only plan-ending children: when the children it
    keeps are all commits that are not recorded (finishing, abstaining), every child is
    kept (``how = "ending"``); with ``"recorded"``, whenever it keeps no recorded child."""

    how: str = "ending"
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.REFUTED})

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        alive = EvidencePruning().keep(search, edges)
        if len(alive) == len(edges):
            return alive
        if self.how == "ending":
            ends = all(not e.recorded and e.action.kind is COMMIT for e in alive)
        else:
            ends = not any(e.recorded for e in alive)
        return edges if ends else alive


def _prune_keeps(how: str) -> Callable[[Design], Design]:
    def swap(parts: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(PruneKeepsPlan(how) if isinstance(p, EvidencePruning) else p
                     for p in parts)

    return lambda d: d._replace(select_filters=swap(d.select_filters),
                                rollout_filters=swap(d.rollout_filters))


@dataclass(frozen=True)
class EvidenceMore(Widener):
    """A widener: the evidence widening adding up to ``extra`` locally verified decisions
    instead of one."""

    extra: int = 2
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.VERIFIED})

    def visit(self, search: HyperMCTS, node: Node) -> None:
        return None

    def wants_index(self, search: HyperMCTS) -> bool:
        return bool(search.ledger.verified)

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        if index is None:
            return
        for _ in range(self.extra):
            before = len(node.edges)
            add_evidence(search, node, decisions, index)
            if len(node.edges) == before:
                return


@dataclass(frozen=True)
class EvidenceFurther(Widener):
    """A widener: the evidence widening adding, after its one decision, up to
    ``extra - 1`` more locally verified decisions of A_dec(h), in its order: with
    ``keep = "same"`` only ones about the same local objectives as that one (alternatives for
    the same part of the plan); with ``"open"`` only ones none of whose local objectives a
    recorded decision on the path to h is about (parts of the plan still open; adopted as
    ``MCTSConfig.evidence_width``)."""

    extra: int = 3
    keep: str = "open"
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.VERIFIED})

    def visit(self, search: HyperMCTS, node: Node) -> None:
        return None

    def wants_index(self, search: HyperMCTS) -> bool:
        return bool(search.ledger.verified)

    @staticmethod
    def _path_labels(search: HyperMCTS, node: Node) -> set[str]:
        hg = search.hypergraph
        assert hg is not None
        labels: set[str] = set()
        child, parent = node, node.parent
        while parent is not None:
            edge = next(e for e in parent.edges if e._child is child)
            if edge.recorded and edge.identity in hg.nodes:
                labels |= hg.nodes[edge.identity].by_label.keys() & search.ledger.local
            child, parent = parent, parent.parent
        return labels

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        if index is None:
            return
        before = len(node.edges)
        add_evidence(search, node, decisions, index)
        if len(node.edges) == before:
            return
        hg = search.hypergraph
        assert hg is not None
        local = search.ledger.local
        if self.keep == "same":
            about = hg.nodes[node.edges[-1].identity].by_label.keys() & local
        else:
            served = self._path_labels(search, node)
        have = {e.action.key for e in node.edges}
        added = 1
        for action in decisions:
            if added >= self.extra:
                break
            if action.kind is INFO or action.key in have:
                continue
            v = search.env.recorded_id(action)
            if v is None or v not in hg.nodes or not hg.verified(v, local):
                continue
            labels = hg.nodes[v].by_label.keys()
            if (labels & local != about) if self.keep == "same" else bool(labels & served):
                continue
            node.widen(action, v, True)
            added += 1


def _put_first(part: Any) -> Callable[[Design], Design]:
    """The design with the (stateless) child filter ``part`` before its rollout filters."""
    return lambda d: _first(d, part)


def _widener(part: Any) -> Callable[[Design], Design]:
    """The design with ``part`` in place of its evidence widening."""
    return lambda d: d._replace(wideners=tuple(
        part if isinstance(w, EvidenceWidening) else w for w in d.wideners))


for _scope in ("all", "near", "local", "full"):
    td.VARIANTS[f"nogood_{_scope}"] = _run(_nogood(_scope, False))
    td.VARIANTS[f"nogood_{_scope}_sel"] = _run(_nogood(_scope, True))
for _how in ("best", "sample"):
    td.VARIANTS[f"free_{_how}"] = _run(_put_first(FreeGuided(_how)))
for _rank in ("prior", "fewest"):
    td.VARIANTS[f"evw_{_rank}"] = _run(_widener(EvidenceChoice(_rank)))
for _among in ("free", "recorded"):
    td.VARIANTS[f"finish_last_{_among}"] = _run(_put_first(FinishLast(_among)))
for _how in ("ending", "recorded"):
    td.VARIANTS[f"prune_keeps_{_how}"] = _run(_prune_keeps(_how))
for _extra in (2, 3, 5):
    td.VARIANTS[f"ending_evw{_extra}"] = _run(_widener(EvidenceMore(_extra)), current=True)
for _extra in (2, 3):
    td.VARIANTS[f"ending_alt{_extra}"] = _run(_widener(EvidenceFurther(_extra, "same")),
                                              current=True)
for _extra in (2, 3):
    td.VARIANTS[f"ending_open{_extra}"] = _run(_widener(EvidenceFurther(_extra)), current=True)
td.VARIANTS["uct_finish_last"] = _run(_put_first(FinishLast("recorded")), plain=True)


def alternatives(seed: int, n: int) -> None:
    """Failed shopping tasks of the default HyperMCTS, per item: how many products the
    hypergraph verified on the item's own objectives by the end, and, where the hidden gold
    product (read for the analysis only) is one of several, whether it has the highest prior,
    the highest pooled budget mean, or the fewest observations among them."""
    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks("shopping", n, seed)):
        search = HyperMCTS(env, make_policy("heuristic"), MCTSConfig(**td.FL),
                           task_seed(seed, i))
        if search.run().success:
            continue
        task: Any = env.task  # type: ignore[attr-defined]
        hg = search.hypergraph
        assert hg is not None
        counts["failed"] += 1
        for item, gold in zip(task.items, task.gold, strict=True):
            labels = {g for g in search.ledger.local if g.startswith(f"item{item.index}.")}
            rows = []  # (is gold, prior, budget mean, observations)
            for v, node in hg.nodes.items():
                if labels & node.by_label.keys() and hg.verified(v, labels):
                    budget = node.by_label.get("budget")
                    rows.append((gold in str(v), hg.prior(v),
                                 budget.total / budget.count if budget else 0.0,
                                 sum(p.count for p in node.by_label.values())))
            counts["items"] += 1
            counts["verified products"] += len(rows)
            golds = [r for r in rows if r[0]]
            if not golds:
                counts["items whose gold product is not verified"] += 1
                continue
            if len(rows) == 1:
                continue
            g, others = golds[0], [r for r in rows if not r[0]]
            counts["gold among several verified"] += 1
            counts["... highest prior"] += all(g[1] > o[1] for o in others)
            counts["... highest budget mean"] += all(g[2] > o[2] for o in others)
            counts["... fewest observations"] += all(g[3] < o[3] for o in others)
    print("shopping", seed, dict(counts))


def repeats(seed: int, n: int) -> None:
    """Failed shopping tasks of the default HyperMCTS: evaluated rollouts, those that met
    every local objective, and how many distinct product sets those chose; solved ones: was
    the winning product set tried before (and failed then, on the budget)?"""
    counts: Counter[str] = Counter()
    for i, env in enumerate(load_tasks("shopping", n, seed)):
        solved, search = td.recorded(env, MCTSConfig(**td.FL), task_seed(seed, i))
        products = [frozenset(k for k in taken if k.startswith("choose:"))
                    for taken in search.taken]
        if solved:
            counts["solved"] += 1
            counts["... by a product set that had failed before"] += products[-1] in products[:-1]
            continue
        counts["failed"] += 1
        counts["rollouts"] += len(search.seen)
        sets = [chosen for chosen, verdict in zip(products, search.seen, strict=True)
                if min(sc for g, sc in verdict.objective_scores.items() if g != "budget") >= 1]
        counts["locally complete rollouts"] += len(sets)
        counts["distinct product sets among them"] += len(set(sets))
    print("shopping", seed, dict(counts))


def abstentions(seed: int, n: int) -> None:
    """qa: solved tasks and evaluated rollouts that end by abstaining, for UCT and HyperMCTS
    before ending decisions last (with each of its evidence rules switched off in turn) and
    with it."""
    plain: dict[str, Any] = {"lam": 0.0, "hypergraph": False}
    configs = {"uct": MCTSConfig(**plain, **td.FL), "uct_ending_last": MCTSConfig(**plain),
               "hyper": MCTSConfig(**td.FL),
               "hyper_no_pruning": MCTSConfig(evidence_pruning=False, **td.FL),
               "hyper_no_composed": MCTSConfig(compose_every=0, **td.FL),
               "hyper_no_widening": MCTSConfig(evidence_widening=False, **td.FL),
               "hyper_ending_last": MCTSConfig(evidence_width=1)}
    for name, config in configs.items():
        counts: Counter[str] = Counter()
        for i, env in enumerate(load_tasks("qa", n, seed)):
            solved, search = td.recorded(env, config, task_seed(seed, i))
            counts["solved"] += solved
            counts["rollouts"] += len(search.taken)
            counts["... ending by abstaining"] += sum(t[-1] == "abstain" for t in search.taken)
        print("qa", seed, name, dict(counts))


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[4] == "--abstentions":
        abstentions(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) > 4 and sys.argv[4] == "--alternatives":
        alternatives(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) > 4 and sys.argv[4] == "--repeats":
        repeats(int(sys.argv[2]), int(sys.argv[3]))
    else:
        td.compare(sys.argv[1], [int(s) for s in sys.argv[2].split(",")], int(sys.argv[3]),
                   sys.argv[4].split(","))
