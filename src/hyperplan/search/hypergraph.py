"""The cross-trajectory hypergraph H_k = (V_k, E_k) of HyperMCTS (seed 003).

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

Agg (the seed defers it to an appendix we do not have) is selectable by name -- see
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
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import NamedTuple

from hyperplan.search.env import Objective, Verdict

GLOBAL = "global"
"""The label y_e of trajectory-level hyperedges."""

EdgeKey = tuple[frozenset[Hashable], str]


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


class NodeStats:
    """Per decision node v: its incident edges E_k(v) and, per label y, the pooled count and
    score sum of the observations on those edges (sum_e N(e) Q(e) = sum of their scores), so
    the count-weighted means the aggregators need cost O(1) or O(#labels), not O(#edges).
    ``obj_mean_sum`` / ``obj_labels`` keep the sum and number of the per-objective-label pooled
    means incrementally (for ``balanced``)."""

    __slots__ = ("by_label", "incident", "obj_labels", "obj_mean_sum")

    def __init__(self) -> None:
        self.incident: list[EdgeStats] = []
        self.by_label: dict[str, list[float]] = {}
        self.obj_mean_sum = 0.0
        self.obj_labels = 0

    def add(self, label: str, score: float) -> None:
        pooled = self.by_label.get(label)
        if pooled is None:
            self.by_label[label] = [1.0, score]
            if label != GLOBAL:
                self.obj_labels += 1
                self.obj_mean_sum += score
            return
        n, total = pooled
        pooled[0] = n + 1.0
        pooled[1] = total + score
        if label != GLOBAL:
            self.obj_mean_sum += (total + score) / (n + 1.0) - total / n


Aggregator = Callable[[NodeStats], float]


def _agg_balanced(stats: NodeStats) -> float:
    pooled = stats.by_label.get(GLOBAL)
    if stats.obj_labels:
        objective = stats.obj_mean_sum / stats.obj_labels
        return objective if pooled is None else 0.5 * (objective + pooled[1] / pooled[0])
    return 0.0 if pooled is None else pooled[1] / pooled[0]


def _agg_min(stats: NodeStats) -> float:
    return min((t / n for n, t in stats.by_label.values()), default=0.0)


def _agg_max(stats: NodeStats) -> float:
    return max((e.mean for e in stats.incident), default=0.0)


def _agg_pooled(stats: NodeStats) -> float:
    n_total = sum(n for n, _ in stats.by_label.values())
    return sum(t for _, t in stats.by_label.values()) / n_total if n_total else 0.0


AGGREGATORS: Mapping[str, Aggregator] = {
    "balanced": _agg_balanced,
    "min": _agg_min,
    "max": _agg_max,
    "pooled": _agg_pooled,
}
DEFAULT_AGG = "balanced"


_new = tuple.__new__  # builds an Observation without the slow generated NamedTuple.__new__


def extract(
    recorded: Iterable[Hashable], verdict: Verdict, objectives: Sequence[Objective]
) -> list[Observation]:
    """Psi(tau, G): the trajectory-level observation (C(tau), "global", R) when at least two
    decisions are recorded, and per objective g the observation (S_g, g, rho_g or R), where
    S_g = ``verdict.objective_decisions[g]`` if given, else C(tau). Empty decision sets give
    no observation. Scores are clipped to [0, 1]."""
    decisions = frozenset(recorded)
    reward = verdict.reward
    reward = 0.0 if reward < 0.0 else (1.0 if reward > 1.0 else reward)
    out: list[Observation] = []
    if len(decisions) >= 2:
        out.append(_new(Observation, (decisions, GLOBAL, reward)))
    subsets = verdict.objective_decisions
    scores = verdict.objective_scores
    for objective in objectives:
        gid = objective.id
        subset = subsets.get(gid)
        members = decisions if subset is None else frozenset(subset)
        if not members:
            continue
        score = scores.get(gid, reward)
        score = 0.0 if score < 0.0 else (1.0 if score > 1.0 else score)
        out.append(_new(Observation, (members, gid, score)))
    return out


class Hypergraph:
    """E_k with the incident-edge index per decision node and the prior per node (``values``,
    refreshed for the touched nodes after each rollout's update)."""

    __slots__ = ("_agg", "agg_name", "edges", "nodes", "rollouts", "values")

    def __init__(self, agg: str = DEFAULT_AGG) -> None:
        if agg not in AGGREGATORS:
            raise ValueError(f"unknown aggregator {agg!r}; choose one of {sorted(AGGREGATORS)}")
        self.agg_name = agg
        self._agg = AGGREGATORS[agg]
        self.edges: dict[EdgeKey, EdgeStats] = {}
        self.nodes: dict[Hashable, NodeStats] = {}
        # prior(v) per node, recomputed in update() for the nodes it touched (once per node
        # per rollout), so selection reads priors with one dict lookup each
        self.values: dict[Hashable, float] = {}
        self.rollouts = 0

    def update(self, observations: Iterable[Observation]) -> None:
        """Apply one rollout's observations: E_k = E_{k-1} ∪ {new keys}, then the incremental
        mean update of every observed edge (several observations of one key in one rollout
        each count); then refresh prior(v) of every touched node."""
        self.rollouts += 1
        edges, nodes = self.edges, self.nodes
        touched: dict[Hashable, NodeStats] = {}
        for decisions, label, score in observations:
            key = (decisions, label)
            stats = edges.get(key)
            new = stats is None
            if stats is None:
                stats = edges[key] = EdgeStats()
            stats.n += 1
            stats.mean += (score - stats.mean) / stats.n
            for v in decisions:
                node = nodes.get(v)
                if node is None:
                    node = nodes[v] = NodeStats()
                touched[v] = node
                if new:
                    node.incident.append(stats)
                # NodeStats.add, inlined (this loop is the hot path of the update)
                pooled = node.by_label.get(label)
                if pooled is None:
                    node.by_label[label] = [1.0, score]
                    if label != GLOBAL:
                        node.obj_labels += 1
                        node.obj_mean_sum += score
                else:
                    n, total = pooled
                    pooled[0] = n + 1.0
                    pooled[1] = total + score
                    if label != GLOBAL:
                        node.obj_mean_sum += (total + score) / (n + 1.0) - total / n
        agg, values = self._agg, self.values
        for v, node in touched.items():
            value = agg(node)
            values[v] = 0.0 if value < 0.0 else (1.0 if value > 1.0 else value)

    def prior(self, v: Hashable) -> float:
        """prior(v) = Agg over E_k(v), in [0, 1]; 0 when v has no incident edge (kept in
        ``values``, refreshed by :meth:`update`)."""
        return self.values.get(v, 0.0)

    def edge(self, decisions: Iterable[Hashable], label: str) -> EdgeStats | None:
        """The statistics of edge (S, y), or None when unseen."""
        return self.edges.get((frozenset(decisions), label))

    def incident(self, v: Hashable) -> list[EdgeKey]:
        """The keys of E_k(v)."""
        return [key for key in self.edges if v in key[0]]
