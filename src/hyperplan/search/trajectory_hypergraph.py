"""The cross-trajectory hypergraph H_k = (V_k, E_k) of HyperMCTS (HyperMCTS paper, the hypergraph
and its action prior): statistics over the search's own rollouts, not the Tool-Schema
Hypergraph (:class:`hyperplan.graph.Hypergraph`); formerly ``hyperplan.search.hypergraph``,
which still resolves, with a DeprecationWarning, for one release.

* Nodes are canonical decision identities v = phi(a, h) (:meth:`SearchEnv.identity`);
  V_k is the union of C(tau_i) over the k evaluated rollouts.
* A hyperedge is keyed by e = (S_e, y_e): a decision set S_e (a ``frozenset``, so the order in
  which the decisions were taken does not matter -- A1 B1 C1 and B1 A1 C1 update the same edge,
  while the tree keeps both histories) and a label y_e in G ∪ {"global"}.
* Each edge keeps a running count N_hyper(e) and mean Q_hyper(e), both 0 for an unseen key,
  updated per observation (S, y, r) by the incremental mean
  ``N <- N + 1;  Q <- Q + (r - Q) / N``.
* The extractor Psi(tau, G) (:func:`extract`) returns the observations of one rollout: a
  trajectory-level observation (C(tau), "global", R(tau)) when |C(tau)| >= 2, and one
  objective-level observation per objective g with S = the decisions associated with g
  (``Verdict.objective_decisions[g]``, else all of C(tau)) and score rho_g(tau) when the
  verifier gives it, else R(tau).
* The action prior is prior(v) = Agg({(N_hyper(e), Q_hyper(e), y_e) : e in E_k(v)}) in [0, 1]
  over the incident edges E_k(v) = {e : v in S_e}; 0 when E_k(v) is empty.

Agg (the paper specifies it in Appendix A.2, which we do not have) is selectable by name -- see
:data:`AGGREGATORS`:

``balanced`` (default)
    The mean of two parts: the objective part (per objective label g touching v, the
    count-weighted mean of its incident edges' means -- i.e. the pooled mean of every
    rho_g observation involving v -- then the plain mean over those labels, so every objective
    weighs the same whatever its edge count) and the trajectory part (the count-weighted mean
    of v's "global" edges). When only one part exists it is used alone. Rationale: objective
    edges are the sharp signal (which requirement a decision meets), trajectory edges carry
    the joint, global-constraint signal that case accuracy needs; neither dominates.
``min``
    The pessimistic min over labels (objectives and "global") of the per-label pooled means:
    a decision is worth its worst-served objective, mirroring the all-constraints-hold case
    criterion. Harsh early on: one bad co-occurrence drags a good decision down.
``max``
    The optimistic max of Q_hyper(e) over incident edges: "the best group v has been in".
    Encourages re-trying decisions that ever appeared in a good plan.
``pooled``
    The count-weighted mean over all incident edges regardless of label.

Bookkeeping (<= 50 us per iteration, docs/benchmarks.md): :meth:`TrajectoryHypergraph.observe`
fuses Psi and the update (no :class:`Observation` objects on the search's path; the verdict's
decision sets key their edges as they are, not copied); each observation updates its edge and, per
decision v in S, v's :class:`Pooled` record under y, found in v's :class:`NodeStats` (``nodes[v]``,
then ``by_label[y]``, keyed by the label string). An edge keeps only N and Q -- most edges are
observed once, so a new edge allocates nothing per decision but the records of (v, y) pairs not
seen before. prior(v) is not recomputed for every touched node after a rollout but when it is read,
and cached until an observation touches v. All of this applies the same float operations in the
same order as the plain update, so statistics, priors and search decisions are bit-for-bit the same
(``tests/test_search_golden.py``, ``tests/test_search_hypergraph_perf.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Final, NamedTuple, TypeVar

from mypy_extensions import mypyc_attr

from hyperplan.search.env import Objective, Verdict

GLOBAL: Final = "global"
"""The label y_e of trajectory-level hyperedges."""

EdgeKey = tuple[frozenset[Hashable], str]
KT = TypeVar("KT")
VT = TypeVar("VT")


class Observation(NamedTuple):
    """One output (S_j, y_j, r_j) of the extractor Psi."""

    decisions: frozenset[Hashable]
    label: str
    score: float


class EdgeStats:
    """N_hyper(e) and Q_hyper(e) of one hyperedge."""

    __slots__ = ("mean", "n")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0

    def update(self, score: float) -> None:
        """The incremental mean: N <- N + 1, Q <- Q + (r - Q) / N."""
        self.n += 1
        self.mean += (score - self.mean) / self.n

    def __repr__(self) -> str:
        return f"EdgeStats(n={self.n}, mean={self.mean:.4f})"


class Pooled:
    """Decision v's pooled statistics under one label y: the count and score sum of the
    observations (S, y, r) with v in S."""

    __slots__ = ("count", "total")

    def __init__(self, count: float, total: float) -> None:
        self.count = count
        self.total = total


class NodeStats:
    """Per decision node v: per label y, the pooled count and score sum of the observations on
    v's incident edges (``by_label[y]``, a :class:`Pooled`; sum_e N(e) Q(e) = the sum of their
    scores), so the count-weighted means the aggregators need cost O(1) or O(#labels), not
    O(#edges). :func:`_pool_score` updates them per observation (r scored under y):
    ``count <- count + 1; sum <- sum + r``.
    ``obj_mean_sum`` / ``obj_labels`` keep the sum and number of the per-objective-label pooled
    means incrementally (for ``balanced``). ``value`` caches prior(v) (Agg, clipped; ``None``
    when stale). ``incident`` (E_k(v) as statistics) is kept only for the ``max`` aggregator,
    the one that reads it; :meth:`TrajectoryHypergraph.incident` lists E_k(v) for any aggregator."""

    __slots__ = ("by_label", "incident", "obj_labels", "obj_mean_sum", "value")

    def __init__(self) -> None:
        self.incident: list[EdgeStats] = []
        self.by_label: dict[str, Pooled] = {}
        self.obj_mean_sum = 0.0
        self.obj_labels = 0
        self.value: float | None = None


Aggregator = Callable[[NodeStats], float]


def _agg_balanced(stats: NodeStats) -> float:
    pooled = stats.by_label.get(GLOBAL)
    if stats.obj_labels:
        objective = stats.obj_mean_sum / stats.obj_labels
        return objective if pooled is None else 0.5 * (objective + pooled.total / pooled.count)
    return 0.0 if pooled is None else pooled.total / pooled.count


def _agg_min(stats: NodeStats) -> float:
    return min((p.total / p.count for p in stats.by_label.values()), default=0.0)


def _agg_max(stats: NodeStats) -> float:
    return max((e.mean for e in stats.incident), default=0.0)


def _agg_pooled(stats: NodeStats) -> float:
    n_total = sum(p.count for p in stats.by_label.values())
    return sum(p.total for p in stats.by_label.values()) / n_total if n_total else 0.0


class Agg(StrEnum):
    """The aggregator Agg of prior(v) (module doc); a member equals its name as a string."""

    BALANCED = "balanced"
    MIN = "min"
    MAX = "max"
    POOLED = "pooled"


AGGREGATORS: Mapping[str, Aggregator] = {
    Agg.BALANCED: _agg_balanced,
    Agg.MIN: _agg_min,
    Agg.MAX: _agg_max,
    Agg.POOLED: _agg_pooled,
}
DEFAULT_AGG: Final = Agg.BALANCED


_new = tuple.__new__  # builds an Observation without the slow generated NamedTuple.__new__


def _clip(x: float) -> float:
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


def extract(
    recorded: Iterable[Hashable], verdict: Verdict, objectives: Sequence[Objective]
) -> list[Observation]:
    """Psi(tau, G): the trajectory-level observation (C(tau), "global", R) when at least two
    decisions are recorded, and per objective g the observation (S_g, g, rho_g or R), where
    S_g = ``verdict.objective_decisions[g]`` if given, else C(tau). Empty decision sets give
    no observation. Scores are clipped to [0, 1]."""
    decisions = frozenset(recorded)
    reward = _clip(verdict.reward)
    out: list[Observation] = []
    if len(decisions) >= 2:
        out.append(_new(Observation, (decisions, GLOBAL, reward)))
    subsets = verdict.objective_decisions
    scores = verdict.objective_scores
    for objective in objectives:
        gid = objective.id
        subset = subsets.get(gid)
        members = decisions if subset is None else frozenset(subset)
        if members:
            out.append(_new(Observation, (members, gid, _clip(scores.get(gid, reward)))))
    return out


def _as_dict(mapping: Mapping[KT, VT]) -> dict[KT, VT]:
    """``mapping`` itself when it is a dict (whose ``get`` compiles to a direct call), else
    a dict copy of it."""
    return mapping if isinstance(mapping, dict) else dict(mapping)


def _observe_edge(
    by_label: dict[str, dict[frozenset[Hashable], EdgeStats]], nodes: dict[Hashable, NodeStats],
    born: list[Hashable], decisions: frozenset[Hashable], label: str, score: float,
    track_incident: bool,
) -> None:
    """One observation (S, y, r): N(e) <- N(e) + 1, Q(e) <- Q(e) + (r - Q(e)) / N(e) for
    e = (S, y) (a new edge: N = 1 and Q = 0 + (r - 0)), then the pooled records of S under y
    (:func:`_pool_score`). Edges are found by label, then by decision set, so no (S, y) key
    is built or hashed per observation. Module-level functions, not methods:
    :class:`TrajectoryHypergraph` allows interpreted subclasses, so the compiled build would
    dispatch its method calls generically."""
    edges = by_label.get(label)
    if edges is None:
        edges = by_label[label] = {}
    stats = edges.get(decisions)
    if stats is None:
        stats = edges[decisions] = EdgeStats()
        stats.n = 1
        stats.mean += score - stats.mean  # the incremental mean at N = 1, as update()
        _pool_score(nodes, born, decisions, label, score, stats if track_incident else None)
        return
    stats.n += 1
    stats.mean += (score - stats.mean) / stats.n
    _pool_score(nodes, born, decisions, label, score, None)


def _pool_score(
    nodes: dict[Hashable, NodeStats], born: list[Hashable], decisions: frozenset[Hashable],
    label: str, score: float, new_edge: EdgeStats | None,
) -> None:
    """The hot loop: per v in S, v's pooled record under y (``nodes[v].by_label[y]``; the node
    is made on v's first observation -- and its id appended to ``born`` -- the record on the
    first one labelled y, as count 1, sum r): count + 1, sum + r, and for an objective label
    the per-objective mean sum updated by new mean - old mean; v's cached prior is marked
    stale. ``new_edge`` (given for ``max`` only) is appended to each node's incident list."""
    objective = label != GLOBAL
    for v in decisions:
        node = nodes.get(v)
        if node is None:
            node = nodes[v] = NodeStats()
            born.append(v)
        if new_edge is not None:
            node.incident.append(new_edge)
        node.value = None
        by_label = node.by_label
        pooled = by_label.get(label)
        if pooled is None:
            by_label[label] = Pooled(1.0, score)
            if objective:
                node.obj_labels += 1
                node.obj_mean_sum += score
            continue
        n = pooled.count
        total = pooled.total
        pooled.count = n_new = n + 1.0
        pooled.total = total_new = total + score
        if objective:
            node.obj_mean_sum += total_new / n_new - total / n


@mypyc_attr(allow_interpreted_subclasses=True)
class TrajectoryHypergraph:
    """E_k with pooled per-label statistics per decision node (module doc); prior(v) is
    computed when read and cached on the node until an observation touches it."""

    __slots__ = ("_agg", "_track_incident", "agg_name", "born", "by_label", "nodes", "rollouts")

    def __init__(self, agg: str = DEFAULT_AGG) -> None:
        if agg not in AGGREGATORS:
            raise ValueError(f"unknown aggregator {agg!r}; choose one of "
                             f"{sorted(str(a) for a in AGGREGATORS)}")
        self.agg_name = Agg(agg)
        self._agg = AGGREGATORS[agg]
        self._track_incident = agg == Agg.MAX  # the only Agg that reads E_k(v) itself
        # E_k by label y, then by decision set S (:attr:`edges` is the flat (S, y) view)
        self.by_label: dict[str, dict[frozenset[Hashable], EdgeStats]] = {}
        self.nodes: dict[Hashable, NodeStats] = {}
        # the node ids in order of creation (append-only; progressive widening reads the
        # ids born since it last looked, tree.Pending.sync)
        self.born: list[Hashable] = []
        self.rollouts = 0

    def update(self, observations: Iterable[Observation]) -> None:
        """Apply one rollout's observations: E_k = E_{k-1} ∪ {new keys}, then the incremental
        mean update of every observed edge (several observations of one key in one rollout
        each count) and the pooled statistics of its decisions."""
        self.rollouts += 1
        for decisions, label, score in observations:
            self._observe(decisions, label, score)

    def observe(
        self, recorded: Iterable[Hashable], verdict: Verdict, objectives: Sequence[Objective]
    ) -> None:
        """``update(extract(recorded, verdict, objectives))`` fused: the same observations in
        the same order (so the same statistics, bit for bit) without building them."""
        self.rollouts += 1
        by_label, nodes, born, track = self.by_label, self.nodes, self.born, self._track_incident
        decisions = frozenset(recorded)
        reward = verdict.reward
        reward = 0.0 if reward < 0.0 else (1.0 if reward > 1.0 else reward)
        if len(decisions) >= 2:
            _observe_edge(by_label, nodes, born, decisions, GLOBAL, reward, track)
        subsets = _as_dict(verdict.objective_decisions)
        scores = _as_dict(verdict.objective_scores)
        for objective in objectives:
            gid = objective.id
            subset = subsets.get(gid)
            if subset is None:
                members = decisions
            else:  # the verdict's own frozenset when it is one (no copy, its hash cached)
                members = subset if type(subset) is frozenset else frozenset(subset)
            if members:
                score = scores.get(gid, reward)
                score = 0.0 if score < 0.0 else (1.0 if score > 1.0 else score)
                _observe_edge(by_label, nodes, born, members, gid, score, track)

    def _observe(self, decisions: frozenset[Hashable], label: str, score: float) -> None:
        """One observation (S, y, r) (:func:`_observe_edge`)."""
        _observe_edge(self.by_label, self.nodes, self.born, decisions, label, score,
                      self._track_incident)

    def prior(self, v: Hashable) -> float:
        """prior(v) = Agg over E_k(v), clipped to [0, 1]; 0 when v has no incident edge.
        Computed when read and cached on the node until an observation touches it."""
        node = self.nodes.get(v)
        if node is None:
            return 0.0
        value = node.value
        if value is None:
            value = node.value = _clip(self._agg(node))
        return value

    def priors_of(self, ids: Iterable[Hashable | None]) -> list[float]:
        """:meth:`prior` of each identity, -1.0 for ``None`` (an action without one, e.g. an
        information step); one call for a whole child list or candidate list."""
        nodes, agg = self.nodes, self._agg
        listed = ids if isinstance(ids, list) else list(ids)  # a list loop compiles natively
        out: list[float] = []
        for v in listed:
            if v is None:
                out.append(-1.0)
                continue
            node = nodes.get(v)
            if node is None:
                out.append(0.0)
                continue
            value = node.value
            if value is None:
                value = node.value = _clip(agg(node))
            out.append(value)
        return out

    def verified(self, v: Hashable, labels: Container[str]) -> bool:
        """Whether v has an observation under one of ``labels`` and every one of them scored
        1: each objective g in ``labels`` that v was associated with (S_g of Psi) was met by
        every rollout that took v. Scores are clipped to [0, 1], so a pooled record is all
        ones exactly when its sum equals its count."""
        node = self.nodes.get(v)
        if node is None:
            return False
        found = False
        for label, pooled in node.by_label.items():
            if label in labels:
                if pooled.total < pooled.count:
                    return False
                found = True
        return found

    def refuted(self, v: Hashable, labels: Container[str]) -> bool:
        """Whether some objective g in ``labels`` that v was associated with was failed by
        every rollout that took v (its pooled record sums to 0: every rho_g was 0) -- the
        counterpart of :meth:`verified`; False for a v the hypergraph has not seen."""
        node = self.nodes.get(v)
        if node is None:
            return False
        for label, pooled in node.by_label.items():
            if label in labels and pooled.total == 0.0:
                return True
        return False

    def free(self, v: Hashable, local: Container[str]) -> bool:
        """Whether v is a node of V_k none of whose labels is in ``local``: every rollout that
        took v associated it with global objectives only (and the trajectory), never with an
        objective about one part of the plan -- a decision such as a coupon, which matters
        only through the plan as a whole. False for a v the hypergraph has not seen."""
        node = self.nodes.get(v)
        if node is None:
            return False
        return all(label not in local for label in node.by_label)

    def local_marks(self, v: Hashable, local: Container[str]) -> tuple[bool, bool]:
        """(:meth:`refuted`, :meth:`free`) of v over the labels ``local``, read in one pass
        over v's labels."""
        node = self.nodes.get(v)
        if node is None:
            return False, False
        refuted = False
        free = True
        for label, pooled in node.by_label.items():
            if label in local:
                free = False
                if pooled.total == 0.0:
                    refuted = True
                    break
        return refuted, free

    def known(self, v: Hashable) -> bool:
        """Whether v is a node of V_k (it has an incident edge)."""
        return v in self.nodes

    def edge(self, decisions: Iterable[Hashable], label: str) -> EdgeStats | None:
        """The statistics of edge (S, y), or None when unseen."""
        edges = self.by_label.get(label)
        return None if edges is None else edges.get(frozenset(decisions))

    def incident(self, v: Hashable) -> list[EdgeKey]:
        """The keys of E_k(v)."""
        return [(decisions, label) for label, edges in self.by_label.items()
                for decisions in edges if v in decisions]

    @property
    def edges(self) -> dict[EdgeKey, EdgeStats]:
        """E_k as one mapping (S, y) -> statistics, label by label (a new dict per read)."""
        return {(decisions, label): stats for label, edges in self.by_label.items()
                for decisions, stats in edges.items()}

    @property
    def empty(self) -> bool:
        """Whether E_k is empty (no observation yet)."""
        return not self.by_label
